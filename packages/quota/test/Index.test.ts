import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

describe("@sluice/quota", () => {
  it("the package index never loads ioredis (the Redis store and plan store are a subpath)", () => {
    const src = join(dirname(fileURLToPath(import.meta.url)), "..", "src")
    const seen = new Set<string>()
    const external = new Set<string>()
    const walk = (file: string) => {
      if (seen.has(file)) return
      seen.add(file)
      const text = readFileSync(file, "utf8")
      for (const m of text.matchAll(/^(?:import|export)[^"']*["']([^"']+)["']/gm)) {
        const spec = m[1]!
        if (spec.startsWith(".")) walk(join(dirname(file), spec.replace(/\.js$/, ".ts")))
        else external.add(spec)
      }
    }
    walk(join(src, "index.ts"))
    expect(seen.size).toBeGreaterThan(5)
    expect(
      [...external].filter((spec) => spec === "ioredis" || spec.startsWith("@sluice/core/IoRedis"))
    ).toEqual([])
    expect([...seen].some((f) => f.endsWith("Redis.ts") || f.endsWith("ioRedisStore.ts"))).toBe(false)
  })
})

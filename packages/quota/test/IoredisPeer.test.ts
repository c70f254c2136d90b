import { readFileSync } from "node:fs"
import { describe, expect, it } from "@effect/vitest"

const root = new URL("../../../", import.meta.url)
const json = (path: string) => JSON.parse(readFileSync(new URL(path, root), "utf8")) as Record<string, any>

// `^a.b.c` alternatives joined by `||`, the only form these ranges use (a major above 0).
const satisfies = (version: string, range: string): boolean =>
  range.split("||").some((alternative) => {
    const m = /^\s*\^(\d+)\.(\d+)\.(\d+)\s*$/.exec(alternative)
    if (m === null) throw new Error(`a range of another form: ${alternative}`)
    const [major, minor, patch] = version.split(".").map(Number) as [number, number, number]
    const [, a, b, c] = m.map(Number) as [number, number, number, number]
    return major === a && (minor > b || (minor === b && patch >= c))
  })

const packages = ["core", "quota", "adaptive"].flatMap((name) => [
  `packages/${name}/package.json`,
  `effect3/packages/${name}/package.json`
])

describe("ioredis peer range", () => {
  it.each(packages)("%s admits both ioredis majors the tests run on (5.x, 6.x)", (path) => {
    const range = json(path).peerDependencies.ioredis as string
    for (const installed of ["node_modules/ioredis/package.json", "node_modules/ioredis6/package.json"]) {
      const version = json(installed).version as string
      expect(satisfies(version, range), `${range} admits ${version}`).toBe(true)
    }
  })
})

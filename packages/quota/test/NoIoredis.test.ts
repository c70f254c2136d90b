// The modules over Effect's own `Redis` service load where ioredis is not installed: a child
// `node` (tsx, the `@sluice/source` condition) with a hook that makes resolving `ioredis` throw
// (noIoredis/block-ioredis.mjs) imports them; the ioredis modules, in the same setup, must not
// load, naming ioredis (the control: the hook does block ioredis).
import { execFile } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { describe, expect, it } from "vitest"

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, "..", "..", "..")
const hook = pathToFileURL(join(here, "noIoredis", "block-ioredis.mjs")).href
const loader = join(here, "noIoredis", "load.mjs")

type Loaded = Record<string, { readonly exports?: ReadonlyArray<string>; readonly error?: string }>

/** Imports each module in a child process where ioredis cannot be resolved. */
const loadWithoutIoredis = (...specifiers: ReadonlyArray<string>) =>
  new Promise<Loaded>((resolve, reject) =>
    execFile(
      process.execPath,
      ["--import", "tsx", "--import", hook, "--conditions=@sluice/source", loader, ...specifiers],
      { cwd: root, maxBuffer: 16 << 20 },
      (error, stdout, stderr) => {
        if (error !== null) return reject(new Error(`${error.message}\n${stdout}${stderr}`))
        try {
          resolve(JSON.parse(stdout.trim().split("\n").at(-1)!) as Loaded)
        } catch {
          reject(new Error(`no result from the child:\n${stdout}${stderr}`))
        }
      }
    )
  )

describe("without ioredis installed", () => {
  it("@sluice/quota/Redis and @sluice/adaptive/RedisQpsSensor load (nothing of them resolves ioredis)", async () => {
    const loaded = await loadWithoutIoredis("@sluice/quota/Redis", "@sluice/adaptive/RedisQpsSensor")
    expect(loaded).toEqual({
      "@sluice/quota/Redis": { exports: ["layerPlanStore", "layerStore", "makeConfig", "makeStore"] },
      "@sluice/adaptive/RedisQpsSensor": { exports: ["layer", "make"] }
    })
  })

  it("control: @sluice/quota/IoRedis and @sluice/adaptive/IoRedisQpsSensor do not load, naming ioredis", async () => {
    const loaded = await loadWithoutIoredis("@sluice/quota/IoRedis", "@sluice/adaptive/IoRedisQpsSensor")
    for (const specifier of ["@sluice/quota/IoRedis", "@sluice/adaptive/IoRedisQpsSensor"]) {
      expect(loaded[specifier]?.exports, specifier).toBeUndefined()
      expect(loaded[specifier]?.error, specifier).toMatch(/ioredis is not installed .*"ioredis"/)
    }
  })
})

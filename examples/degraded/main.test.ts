import { execFile } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, "..", "..")

// Over real sockets and real time: counts, never durations. Which prefetches get the first
// shard, the cache or a full answer depends on timing; that each gets one of them does not.
describe("examples/degraded", () => {
  it("the user gets full answers, the prefetchers first-shard or cached ones, nobody a failure", async () => {
    const { stdout } = await promisify(execFile)(
      "npx",
      ["tsx", "--conditions=@sluice/source", join(here, "main.ts")],
      { cwd: root, timeout: 100_000 }
    )
    const result = JSON.parse(stdout)
    expect(result.warm).toEqual({ full: 4, partial: 0, stale: 0, failed: 0 })
    expect(result.user).toEqual({ full: 8, partial: 0, stale: 0, failed: 0 })
    const p = result.prefetch
    expect(p.full + p.partial + p.stale + p.failed).toBe(32 * 8)
    expect(p.failed).toBe(0)
    expect(p.partial + p.stale).toBeGreaterThan(0)
  }, 120_000)
})

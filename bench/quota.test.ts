import { describe, expect, it } from "@effect/vitest"
import { runScript } from "./runScript.js"

const stats = (value: any) => {
  expect(Object.keys(value).sort()).toEqual(["p50Ms", "p99Ms", "throughputPerSec"])
  for (const n of Object.values(value)) expect(Number.isFinite(n) && (n as number) > 0).toBe(true)
}

describe("bench/quota.ts", () => {
  it("prints the JSON the issue specifies (short mode; speed is not checked)", async () => {
    const { stdout } = await runScript("bench/quota.ts", ["--json", "--quick"], 150_000)
    const lines = stdout.trim().split("\n")
    expect(lines).toHaveLength(1)
    const result = JSON.parse(lines[0]!)
    expect(Object.keys(result).sort()).toEqual(
      ["checks", "failOpenMaxMs", "oneTier", "peers", "roundTripsPerCheck", "twoTier"].sort()
    )
    expect(Number.isInteger(result.checks) && result.checks > 0).toBe(true)
    stats(result.oneTier)
    stats(result.twoTier)
    expect(Object.keys(result.peers).sort()).toEqual(["@effect/experimental", "rate-limiter-flexible"])
    stats(result.peers["rate-limiter-flexible"])
    stats(result.peers["@effect/experimental"])
    // measured from INFO commandstats: one EVALSHA per check
    expect(result.roundTripsPerCheck).toBe(1)
    expect(result.failOpenMaxMs).toBeGreaterThan(0)
  }, 180_000)
})

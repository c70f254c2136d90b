import { describe, expect, it } from "@effect/vitest"
import { Redis as IORedis } from "ioredis"
import { runScript } from "./runScript.js"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"

/** the keys of the shared Redis under `prefix` */
const keysUnder = async (prefix: string) => {
  const redis = new IORedis(REDIS_URL)
  try {
    const found: Array<string> = []
    let cursor = "0"
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000)
      found.push(...keys)
      cursor = next
    } while (cursor !== "0")
    return found
  } finally {
    await redis.quit()
  }
}

const stats = (value: any) => {
  expect(Object.keys(value).sort()).toEqual(["p50Ms", "p99Ms", "throughputPerSec"])
  for (const n of Object.values(value)) expect(Number.isFinite(n) && (n as number) > 0).toBe(true)
}

describe("bench/quota.ts", () => {
  it("prints the JSON the issue specifies (short mode; speed is not checked)", async () => {
    const prefix = `test:bench-quota:${process.pid}:${Math.random().toString(36).slice(2)}`
    const { stdout } = await runScript("bench/quota.ts", ["--json", "--quick", "--prefix", prefix], 150_000)
    // it leaves nothing behind in the shared Redis: its own keys, rate-limiter-flexible's and
    // Effect's RateLimiter's ("effect/persistence")
    expect(await keysUnder(`${prefix}:`)).toEqual([])
    const lines = stdout.trim().split("\n")
    expect(lines).toHaveLength(1)
    const result = JSON.parse(lines[0]!)
    expect(Object.keys(result).sort()).toEqual(
      [
        "checks",
        "failOpenMaxMs",
        "oneTier",
        "peers",
        "roundTripsPerCheck",
        "twoTier",
        "twoTierNodeRedis"
      ].sort()
    )
    expect(Number.isInteger(result.checks) && result.checks > 0).toBe(true)
    stats(result.oneTier)
    stats(result.twoTier)
    // the same store over Effect's Redis (NodeRedis)
    stats(result.twoTierNodeRedis)
    expect(Object.keys(result.peers).sort()).toEqual(["effect/persistence", "rate-limiter-flexible"])
    stats(result.peers["rate-limiter-flexible"])
    stats(result.peers["effect/persistence"])
    // measured from INFO commandstats: one EVALSHA per check
    expect(result.roundTripsPerCheck).toBe(1)
    expect(result.failOpenMaxMs).toBeGreaterThan(0)
  }, 180_000)
})

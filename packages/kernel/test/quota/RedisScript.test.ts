import * as Sha1 from "@sluice/kernel/hash/Sha1"
import * as QuotaPlan from "@sluice/kernel/quota/QuotaPlan"
import * as RedisScript from "@sluice/kernel/quota/RedisScript"
import { createHash } from "node:crypto"
import { describe, expect, it } from "vitest"

const plan = (limit: number) =>
  QuotaPlan.compile({
    tiers: [
      { name: "spike", algorithm: "gcra", limit, periodMs: 1000, burst: 2 * limit },
      { name: "count", algorithm: "sliding-window", limit: 100, periodMs: 3_600_000 }
    ]
  })

describe("RedisScript", () => {
  it("tier ids: 48 bits of the SHA-1 of algorithm and name, times two, odd for a sliding window", () => {
    const [spike, count] = plan(5).tiers
    const expected = (algorithm: string, name: string) =>
      parseInt(createHash("sha1").update(`${algorithm}\u0000${name}`).digest("hex").slice(0, 12), 16)
    expect(RedisScript.tierId(spike!)).toBe(expected("gcra", "spike") * 2)
    expect(RedisScript.tierId(count!)).toBe(expected("sliding-window", "count") * 2 + 1)
    expect(RedisScript.tierId(count!)).toBeLessThan(2 ** 49)
    expect(RedisScript.ADJUST_SHA).toBe(createHash("sha1").update(RedisScript.ADJUST_SCRIPT).digest("hex"))
  })

  it("bakes the numbers of the first maxBaked plans into their scripts, then shares one per shape", () => {
    const cache = new RedisScript.ScriptCache(1)
    const made: Array<string> = []
    cache.onNew = (script) => made.push(script)
    const first = cache.get(plan(5))
    expect(first.baked).toBe(true)
    expect(first.sha).toBe(Sha1.hex(first.script))
    expect(first.script).toContain("local cap1, per1 = 10, 1000")
    // the same plan decoded twice shares its script
    expect(cache.get(plan(5))).toBe(first)
    const second = cache.get(plan(6))
    expect(second.baked).toBe(false)
    expect(second.script).toContain("num(ARGV[3])")
    expect(cache.get(plan(7))).toBe(second)
    expect(made).toHaveLength(2)
    expect(cache.scripts).toEqual(made)
  })

  it("decodes a reply with the memory store's functions, and the packed state layout", () => {
    const compiled = plan(5)
    const now = 1_800_000_000_000
    // admitted: gcra debt 0, sliding window 0 current and 0 previous
    const admitted = RedisScript.parseReply([now, 1, 0, 0, 0, 0], compiled, 1)
    expect(admitted.allowed).toBe(true)
    expect(admitted.tiers.map((t) => t.remaining)).toEqual([9, 99])
    // denied by the gcra tier (full debt), the window admits: per-tier verdicts follow
    const denied = RedisScript.parseReply([now, 0, 0, 10_000, 3, 0, 0, 1], compiled, 1)
    expect(denied.tiers.map((t) => [t.allowed, t.retryAfterMs])).toEqual([
      [false, 200],
      [true, 0]
    ])
    // a denial that starts a block of 500 ms reports at least the block
    const block = RedisScript.parseReply([now, 0, -500, 10_000, 3, 0, 0, 1], compiled, 1)
    expect(block).toMatchObject({ allowed: false, blockedMs: 500 })
    expect(block.tiers[0]!.retryAfterMs).toBe(500)
    const numbers = [now + 5000, 0, RedisScript.tierId(compiled.tiers[0]!), now + 1, 2]
    const bytes = new Uint8Array(8 * numbers.length + 3).subarray(3)
    const view = new DataView(bytes.buffer, bytes.byteOffset)
    numbers.forEach((n, i) => view.setFloat64(8 * i, n, true))
    const state = RedisScript.decodeState(bytes)
    expect(state).toMatchObject({ expiresAt: now + 5000, blockedUntil: 0 })
    expect(state.tiers.get(numbers[2]!)).toEqual([now + 1, 2])
  })

  it("a check's and an adjustment's arguments: the key in a hash tag, the numbers unless baked in", () => {
    const p = plan(5)
    const key = RedisScript.keyOf("sluice:quota:", "acme")
    expect(key).toBe("sluice:quota:{acme}")
    const cache = new RedisScript.ScriptCache(1)
    const baked = cache.get(p)
    expect(RedisScript.checkArgs(baked, p, key, 1)).toEqual([undefined, "1", key, "1"])
    const shared = cache.get(plan(6))
    expect(shared.baked).toBe(false)
    // after the cost: the block, then per tier capacity, period and limit
    expect(RedisScript.checkArgs(shared, plan(6), key, 3)).toEqual([
      undefined,
      "1",
      key,
      "3",
      "0",
      "12",
      "1000",
      "6",
      "100",
      "3600000",
      "100"
    ])
    const [spike, count] = p.tiers
    expect(RedisScript.adjustArgs(p, key, -2, 500)).toEqual([
      "",
      "1",
      key,
      "-2",
      "500",
      String(RedisScript.tierId(spike!)),
      "10",
      "1000",
      "5",
      String(RedisScript.tierId(count!)),
      "100",
      "3600000",
      "100"
    ])
  })

  it("what a failed command says of Redis", () => {
    for (const message of [
      "Command timed out",
      // node-redis
      "Connection timeout",
      "Socket timeout timeout. Expecting data, but didn't receive any in 300ms.",
      "Command timeout during maintenance. Waited to write command for more than 300ms.",
      "TimeoutError"
    ])
      expect(RedisScript.errorReason(message)).toBe("timeout")
    for (const message of [
      "The client is offline",
      "The client is closed",
      "Socket closed unexpectedly",
      "Disconnects client",
      "All the root nodes are unavailable",
      "connect ECONNREFUSED 127.0.0.1:6379",
      "Connection is closed.",
      "Stream isn't writeable and enableOfflineQueue options is false",
      "LOADING Redis is loading the dataset in memory",
      "CLUSTERDOWN The cluster is down"
    ])
      expect(RedisScript.errorReason(message)).toBe("unavailable")
    for (const message of ["ERR Error running script", "", "Error", "ERR timeout is not an integer"])
      expect(RedisScript.errorReason(message)).toBe("error")
  })
})

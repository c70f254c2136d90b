import * as ClientKey from "@sluice/kernel/quota/ClientKey"
import * as Decision from "@sluice/kernel/quota/QuotaDecision"
import * as QuotaPlan from "@sluice/kernel/quota/QuotaPlan"
import fc from "fast-check"
import { createHash } from "node:crypto"
import { describe, expect, it } from "vitest"
import { wtf8 } from "./Wtf8.js"

describe("ClientKey", () => {
  it("an id above the bound is keyed by its first code units, `#` and its SHA-256, whatever the characters", () => {
    const ids = fc.sample(fc.string({ unit: "binary", minLength: 101, maxLength: 400 }), {
      numRuns: 200,
      seed: 8
    })
    ids.push("é".repeat(300), "😀".repeat(150), "\ud800".repeat(120))
    for (const id of ids) {
      const key = ClientKey.storedId(id, 100)
      expect(key).toBe(`${id.slice(0, 35)}#${createHash("sha256").update(wtf8(id)).digest("hex")}`)
      expect(key).toHaveLength(100)
    }
    expect(ClientKey.storedId("short", 100)).toBe("short")
    expect(ClientKey.storedId("k".repeat(100), 100)).toBe("k".repeat(100))
  })

  it("an id with a lone surrogate is keyed by itself, `#` and the SHA-256 of its WTF-8 bytes: distinct ids, distinct keys, and distinct UTF-8", () => {
    const odd = [
      "\ud800",
      "\ud801",
      "\udc00",
      "a\ud800",
      "a\udc00b",
      "\ud800\ud800",
      "\udc00\ud800",
      "\ufffd"
    ]
    const ids = [
      ...odd,
      ...fc.sample(fc.string({ unit: "binary", maxLength: 20 }), { numRuns: 300, seed: 9 })
    ]
    const keys = new Map<string, string>()
    const bytes = new Map<string, string>()
    for (const id of ids) {
      const key = ClientKey.storedId(id, 100)
      if (Buffer.from(id, "utf8").toString("utf8") !== id) {
        expect(key).toBe(`${id}#${createHash("sha256").update(wtf8(id)).digest("hex")}`)
      } else expect(key).toBe(id)
      // what Redis stores: the key's UTF-8 (a lone surrogate there is U+FFFD)
      const utf8 = Buffer.from(key, "utf8").toString("hex")
      expect(keys.get(key) ?? id, JSON.stringify(id)).toBe(id)
      expect(bytes.get(utf8) ?? id, JSON.stringify(id)).toBe(id)
      keys.set(key, id)
      bytes.set(utf8, id)
    }
    // well-formed ids (a surrogate pair, U+FFFD) are their own keys
    expect(ClientKey.storedId("\ud83d\ude00", 100)).toBe("\ud83d\ude00")
    expect(ClientKey.storedId("\ufffd", 100)).toBe("\ufffd")
  })
})

describe("Decision", () => {
  const plan = QuotaPlan.compile({
    tiers: [
      { name: "spike", algorithm: "gcra", limit: 3, periodMs: 1000 },
      { name: "count", algorithm: "sliding-window", limit: 10, periodMs: 60_000 }
    ]
  })

  it("the refusing tier is the first that denies; the wait the longest of those that deny", () => {
    const tiers = Decision.unknownTiers(plan, false, 700)
    expect(tiers.map((t) => [t.tier, t.allowed, t.remaining, t.retryAfterMs])).toEqual([
      ["spike", false, 0, 700],
      ["count", false, 0, 700]
    ])
    const mixed = [
      { ...tiers[0]!, allowed: true, retryAfterMs: 0 },
      { ...tiers[1]!, retryAfterMs: 900 }
    ]
    expect(Decision.deniedBy(mixed)?.tier).toBe("count")
    expect(Decision.retryAfterMs(mixed)).toBe(900)
    const open = Decision.unknownTiers(plan, true, 700)
    expect(open.map((t) => [t.allowed, t.remaining, t.retryAfterMs])).toEqual([
      [true, 3, 0],
      [true, 10, 0]
    ])
    expect(Decision.deniedBy(open)).toBeUndefined()
    expect(Decision.retryAfterMs(open)).toBe(0)
  })

  it("an admission that empties a gcra tier: a fallback denies for one emission interval", () => {
    const empty = { allowed: true, now: 0, tiers: Decision.unknownTiers(plan, false, 0) }
    expect(Decision.emptyWaitMs(plan, empty)).toBe(334) // ceil(1000 / 3)
    expect(Decision.emptyWaitMs(plan, { ...empty, tiers: Decision.unknownTiers(plan, true, 0) })).toBe(0)
  })

  it("a plan scaled by a share keeps exact decimal shares and at least one unit", () => {
    const scaled = QuotaPlan.scale(
      QuotaPlan.compile({
        tiers: [{ name: "t", algorithm: "gcra", limit: 100, periodMs: 1000, burst: 100 }]
      }),
      0.29
    )
    expect(scaled.tiers[0]).toMatchObject({ capacity: 29, limit: 29, capacityPeriod: 29_000, windowMs: 1000 })
    expect(scaled.maxCost).toBe(29)
    expect(QuotaPlan.scale(plan, 0.01).tiers.map((t) => t.capacity)).toEqual([1, 1])
    expect(QuotaPlan.scale(plan, 1)).toBe(plan)
  })
})

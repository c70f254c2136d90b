import * as RateLimit from "@sluice/kernel/wire/RateLimit"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

describe("RateLimit", () => {
  it("formats and parses the IETF rate-limit headers", () => {
    const tiers = [
      { name: "spike", limit: 20, windowMillis: 1000, remaining: 0, resetMillis: 300 },
      { name: "count", limit: 5000, windowMillis: 3_600_000, remaining: 4990, resetMillis: 59 * 60_000 }
    ]
    const policy = RateLimit.formatPolicy(tiers)
    const limit = RateLimit.format(tiers)
    expect(policy).toBe(`"spike";q=20;w=1, "count";q=5000;w=3600`)
    expect(limit).toBe(`"spike";r=0;t=1, "count";r=4990;t=3540`)
    expect(RateLimit.parse(policy)).toEqual([
      { name: "spike", params: { q: 20, w: 1 } },
      { name: "count", params: { q: 5000, w: 3600 } }
    ])
    expect(RateLimit.parse(limit)[1]).toEqual({ name: "count", params: { r: 4990, t: 3540 } })
    // hostile names are sanitised into a valid sf-string
    const odd = RateLimit.format([{ name: 'a"b\\c,d\u00e9', limit: 1, remaining: -3 }])
    expect(odd).toBe(`"a\\"b\\\\cd";r=0`)
    expect(RateLimit.parse(odd)).toEqual([{ name: 'a"b\\cd', params: { r: 0 } }])
  })

  it("numbers the headers cannot hold: infinite, negative, fractional, huge", () => {
    expect(
      RateLimit.formatPolicy([{ name: "t", limit: Infinity, windowMillis: Infinity, remaining: 0 }])
    ).toBe(`"t";q=0;w=0`)
    expect(RateLimit.format([{ name: "t", limit: 1, remaining: 2.7, resetMillis: 1 }])).toBe(`"t";r=2;t=1`)
    expect(RateLimit.format([{ name: "t", limit: 1, remaining: 1e300 }])).toBe(`"t";r=999999999999999`)
    expect(RateLimit.formatPolicy([{ name: "x".repeat(100), limit: 1, remaining: 0 }])).toBe(
      `"${"x".repeat(64)}";q=1`
    )
  })

  it("reads leniently: malformed items are skipped, long values ignored", () => {
    expect(RateLimit.parse(`"a";r=1, b;r=2, "c";r=x, "d" ; r=3`)).toEqual([
      { name: "a", params: { r: 1 } },
      { name: "d", params: { r: 3 } }
    ])
    expect(RateLimit.parse(`"a";r=1`.padEnd(1025, " "))).toEqual([])
    expect(RateLimit.parse(Array.from({ length: 20 }, (_, i) => `"t${i}";r=${i}`).join(", "))).toHaveLength(
      16
    )
    expect(RateLimit.parse(undefined)).toEqual([])
    expect(RateLimit.parse("")).toEqual([])
  })

  it("never throws; whatever a tier holds, what is written parses back to its name and numbers", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (s) => {
        for (const item of RateLimit.parse(s)) {
          for (const value of Object.values(item.params)) expect(Number.isSafeInteger(value)).toBe(true)
        }
      })
    )
    fc.assert(
      fc.property(
        fc.string({ maxLength: 80 }),
        fc.nat({ max: 1_000_000 }),
        fc.nat({ max: 1_000_000 }),
        fc.nat({ max: 86_400_000 }),
        (name, limit, remaining, resetMillis) => {
          const [item] = RateLimit.parse(RateLimit.format([{ name, limit, remaining, resetMillis }]))
          const clean = name.replace(/[^\x20-\x7e]|,/g, "").slice(0, 64)
          expect(item).toEqual({ name: clean, params: { r: remaining, t: Math.ceil(resetMillis / 1000) } })
        }
      )
    )
  })
})

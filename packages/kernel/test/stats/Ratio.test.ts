import * as Ratio from "@sluice/kernel/stats/Ratio"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

// Reference: the ratio as the decimal its shortest round-trip form spells, compared by
// cross-multiplication in BigInt, written from scratch (no shared code with the module).
const reference = (part: number, whole: number, ratio: number): number => {
  const [m, e = "0"] = String(ratio).split("e")
  const [int, frac = ""] = m!.split(".")
  const digits = BigInt(int! + frac)
  const scale = frac.length - Number(e)
  const lhs = scale >= 0 ? BigInt(part) * 10n ** BigInt(scale) : BigInt(part)
  const rhs = scale >= 0 ? digits * BigInt(whole) : digits * BigInt(whole) * 10n ** BigInt(-scale)
  return lhs < rhs ? -1 : lhs > rhs ? 1 : 0
}

describe("Ratio", () => {
  it("exact shares that floating-point multiplication misses", () => {
    for (const [part, whole, ratio] of [
      [55, 100, 0.55],
      [7, 100, 0.07],
      [7, 50, 0.14],
      [7, 25, 0.28],
      [29, 100, 0.29],
      [3, 10, 0.3]
    ] as const) {
      const r = Ratio.make(ratio)
      expect(r.atLeast(part, whole)).toBe(true)
      expect(r.above(part, whole)).toBe(false)
      expect(r.compare(part, whole)).toBe(0)
      expect(r.atLeast(part - 1, whole)).toBe(false)
    }
    // the float rule `part >= ratio * whole` is what misses them
    expect(55 >= 0.55 * 100).toBe(false)
  })

  it("edge ratios: 0, 1, tiny exponents, long fractions, huge counts", () => {
    expect(Ratio.make(0).atLeast(0, 10)).toBe(true)
    expect(Ratio.make(0).above(0, 10)).toBe(false)
    expect(Ratio.make(1).atLeast(10, 10)).toBe(true)
    expect(Ratio.make(1).above(10, 10)).toBe(false)
    expect(Ratio.make(1e-7).compare(1, 10_000_000)).toBe(0)
    expect(Ratio.make(1 / 3).compare(1, 3)).toBe(1) // 1/3 > 0.3333333333333333
    expect(Ratio.make(0.5).compare(2 ** 52, 2 ** 53)).toBe(0)
    expect(Ratio.make(0.1).compare(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)).toBe(1)
    expect(() => Ratio.make(Number.NaN)).toThrow(RangeError)
    expect(() => Ratio.make(-0.1)).toThrow(RangeError)
  })

  it("agrees with a BigInt reference on random counts and ratios", () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 2 ** 40 }),
        fc.integer({ min: 1, max: 2 ** 40 }),
        fc.oneof(
          fc.double({ min: 0, max: 1, noNaN: true }),
          fc.integer({ min: 0, max: 1000 }).map((n) => n / 1000),
          fc.integer({ min: 0, max: 100 }).map((n) => n / 100)
        ),
        (part, whole, ratio) => {
          expect(Ratio.make(ratio).compare(part, whole)).toBe(reference(part, whole, ratio))
        }
      ),
      { numRuns: 2000 }
    )
  })

  it("floorTimes: ⌊ratio × whole⌋ exactly, against the BigInt reference", () => {
    expect(Ratio.make(0.29).floorTimes(100)).toBe(29) // Math.floor(0.29 * 100) is 28
    expect(Math.floor(0.29 * 100)).toBe(28)
    expect(Ratio.make(0.9).floorTimes(30)).toBe(27)
    expect(Ratio.make(0.1).floorTimes(30)).toBe(3)
    expect(Ratio.make(0.1).floorTimes(29)).toBe(2)
    expect(Ratio.make(0).floorTimes(1e15)).toBe(0)
    expect(Ratio.make(1).floorTimes(Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER)
    expect(() => Ratio.make(0.5).floorTimes(1.5)).toThrow(RangeError)
    fc.assert(
      fc.property(
        fc.nat({ max: 2 ** 45 }),
        fc.oneof(
          fc.double({ min: 0, max: 1, noNaN: true }),
          fc.integer({ min: 0, max: 1000 }).map((n) => n / 1000),
          fc.integer({ min: 0, max: 100 }).map((n) => n / 100)
        ),
        (whole, ratio) => {
          const k = Ratio.make(ratio).floorTimes(whole)
          // k ≤ ratio × whole < k + 1, by the reference comparison
          expect(reference(k, whole === 0 ? 1 : whole, ratio) <= 0 || whole === 0).toBe(true)
          if (whole > 0) expect(reference(k + 1, whole, ratio)).toBe(1)
          else expect(k).toBe(0)
        }
      ),
      { numRuns: 2000 }
    )
  })

  it("sumAtMost: decimals as written", () => {
    expect(0.33 + 0.56 + 0.11 <= 1).toBe(false)
    expect(Ratio.sumAtMost([0.33, 0.56, 0.11], 1)).toBe(true)
    expect(Ratio.sumAtMost([0.5, 0.50001], 1)).toBe(false)
    expect(Ratio.sumAtMost([], 0)).toBe(true)
    expect(Ratio.sumAtMost([1e-7, 0.9999999], 1)).toBe(true)
    expect(Ratio.sumAtMost([1e-7, 0.99999991], 1)).toBe(false)
    expect(() => Ratio.sumAtMost([-0.1], 1)).toThrow(RangeError)
  })
})

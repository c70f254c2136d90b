import * as Backoff from "@sluice/kernel/retry/Backoff"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

// A seeded generator of draws in [0, 1) (mulberry32), so a property's runs are reproducible.
const seeded = (seed: number): (() => number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const exponentials = (base: number, factor: number, max: number, count: number) =>
  Array.from({ length: count }, (_, n) => Backoff.exponential(base, factor, max, n))

describe("Backoff.exponential", () => {
  it("grows by the factor and stops growing at the cap", () => {
    expect(exponentials(100, 2, 1000, 7)).toEqual([100, 200, 400, 800, 1000, 1000, 1000])
    expect(exponentials(10, 3, 30_000, 4)).toEqual([10, 30, 90, 270])
    expect(exponentials(100, 1, 30_000, 3)).toEqual([100, 100, 100])
  })

  it("stays finite after many recurrences", () => {
    const delays = exponentials(1, 2, 5000, 2000)
    expect(delays.at(-1)).toBe(5000)
    expect(Backoff.exponential(1, 2, 5000, 1e6)).toBe(5000)
    expect(delays.every(Number.isFinite)).toBe(true)
  })
})

describe("Backoff.jitter", () => {
  const expected = exponentials(100, 2, 10_000, 8)

  it("full jitter stays in [0, d], equal jitter in [d/2, d], for any draw", () => {
    expect(expected).toEqual([100, 200, 400, 800, 1600, 3200, 6400, 10_000])
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (r) => {
        for (const d of expected) {
          const full = Backoff.jitter("full", d, r)
          const equal = Backoff.jitter("equal", d, r)
          expect(full).toBeGreaterThanOrEqual(0)
          expect(full).toBeLessThanOrEqual(d)
          expect(equal).toBeGreaterThanOrEqual(d / 2)
          expect(equal).toBeLessThanOrEqual(d)
        }
      }),
      { numRuns: 200 }
    )
  })

  it("is the draw scaled: the same draws give the same delays, other draws others", () => {
    expect(Backoff.jitter("full", 1000, 0)).toBe(0)
    expect(Backoff.jitter("full", 1000, 0.25)).toBe(250)
    expect(Backoff.jitter("equal", 1000, 0)).toBe(500)
    expect(Backoff.jitter("equal", 1000, 0.5)).toBe(750)
    const run = (seed: number) => {
      const random = seeded(seed)
      return expected.map((d) => Backoff.jitter("full", d, random()))
    }
    expect(run(42)).toEqual(run(42))
    expect(run(42)).not.toEqual(run(43))
    expect(new Set(run(42)).size).toBeGreaterThan(1)
  })

  it("decorrelated delays stay in [base, min(max, 3 × previous)]", () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.integer({ min: 1, max: 500 }),
        fc.integer({ min: 0, max: 20_000 }),
        (seed, b, extra) => {
          const max = b + extra
          const random = seeded(seed)
          let previous = b
          for (let i = 0; i < 30; i++) {
            const d = Backoff.decorrelated(b, max, previous, random())
            expect(d).toBeGreaterThanOrEqual(b)
            expect(d).toBeLessThanOrEqual(Math.min(max, 3 * previous) + 1e-9)
            previous = d
          }
        }
      ),
      { numRuns: 200 }
    )
    // the first delay is drawn in [base, 3 × base]; a draw of 0 is the base
    expect(Backoff.decorrelated(100, 30_000, 100, 0)).toBe(100)
    expect(Backoff.decorrelated(100, 30_000, 100, 0.5)).toBe(200)
    expect(Backoff.decorrelated(100, 250, 1000, 0.99)).toBe(250)
  })
})

describe("Backoff.honorRetryAfter", () => {
  it("takes the hint when it is longer than the computed delay", () => {
    const computed = exponentials(100, 2, 10_000, 5)
    const hints = [2000, 0, 50, 5000, 2500]
    expect(
      computed.map((c, i) => Backoff.honorRetryAfter(c, Backoff.clampRetryAfter(hints[i]!, 30_000)))
    ).toEqual([2000, 200, 400, 5000, 2500])
    expect(Backoff.honorRetryAfter(300, 300)).toBe(300)
  })

  it("clamps absurd and malformed hints to maxWait", () => {
    for (const hint of [365 * 5 * 86_400_000, Infinity, -1000, Number.NaN, -Infinity])
      expect(Backoff.clampRetryAfter(hint, 30_000)).toBe(30_000)
    expect(Backoff.clampRetryAfter(1500, 30_000)).toBe(1500)
    expect(Backoff.clampRetryAfter(0, 30_000)).toBe(0)
    expect(Backoff.clampRetryAfter(30_000, 30_000)).toBe(30_000)
    expect(Backoff.isUsableRetryAfter(30_000, 30_000)).toBe(true)
    expect(Backoff.isUsableRetryAfter(30_001, 30_000)).toBe(false)
    expect(Backoff.isUsableRetryAfter(Infinity, Infinity)).toBe(false)
    // a hint of exactly maxWait is waited, and wins over a shorter computed delay
    expect(Backoff.honorRetryAfter(1600, Backoff.clampRetryAfter(30_000, 30_000))).toBe(30_000)
  })

  it("property: the delay is never shorter than the computed one, nor than a usable hint, nor longer than both", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e7, noNaN: true }),
        fc.double({ noNaN: false }),
        fc.double({ min: 0, max: 1e8, noNaN: true }),
        (computed, hint, maxWait) => {
          const clamped = Backoff.clampRetryAfter(hint, maxWait)
          expect(clamped).toBeGreaterThanOrEqual(0)
          expect(clamped).toBeLessThanOrEqual(maxWait)
          const delay = Backoff.honorRetryAfter(computed, clamped)
          expect(delay).toBe(Math.max(computed, clamped))
        }
      )
    )
  })
})

describe("Backoff options", () => {
  it("exponential: a positive base, a finite factor >= 1 (default 2), a finite cap (default 30 s)", () => {
    const { base, factor, max } = Backoff.exponentialOptions
    expect(base.check(0)).toBe("expected a positive, finite duration, got 0")
    expect(base.check(1)).toBeUndefined()
    expect(factor.fallback.value).toBe(2)
    expect(factor.check(1)).toBeUndefined()
    expect(factor.check(0.5)).toBe("expected a finite factor >= 1, got 0.5")
    expect(factor.check(Number.NaN)).toBe("expected a finite factor >= 1, got NaN")
    expect(max.fallback.value).toBe(30_000)
    expect(max.check(Infinity)).toBe("expected a finite duration, got Infinity")
    expect(Backoff.decorrelatedOptions).toEqual({ base, max })
    expect(Backoff.honorOptions.maxWait.fallback.value).toBe(30_000)
  })

  it("the cap must not be below the base delay", () => {
    expect(Backoff.capIssue(100, 100)).toBeUndefined()
    expect(Backoff.capIssue(100, 5000)).toBeUndefined()
    expect(Backoff.capIssue(1000, 100)).toEqual({
      path: ["max"],
      message: "the maximum delay must not be below the base delay"
    })
  })

  it("the default delays: exponential from 100 ms, doubling, at most 5 s, full jitter", () => {
    expect(Backoff.defaultExponential).toEqual({ base: 100, factor: 2, max: 5000 })
    expect(Backoff.defaultJitter).toBe("full")
  })
})

describe("Backoff.retryAfterOf", () => {
  it("reads a failure's own hint, or through the causes of DontRetry its last one", () => {
    expect(Backoff.retryAfterOf({ _tag: "Overloaded", retryAfter: 5 })).toBe(5)
    expect(Backoff.retryAfterOf({ _tag: "QuotaExceeded" })).toBeUndefined()
    const inner = { _tag: "QuotaExceeded", retryAfter: { millis: 7 } }
    expect(Backoff.retryAfterOf({ _tag: "DontRetry", cause: inner })).toBe(inner.retryAfter)
    expect(Backoff.retryAfterOf({ _tag: "DontRetry", cause: { _tag: "DontRetry", cause: inner } })).toBe(
      inner.retryAfter
    )
    // a DontRetry without a cause is read as itself
    expect(Backoff.retryAfterOf({ _tag: "DontRetry", retryAfter: 3 })).toBe(3)
    expect(Backoff.retryAfterOf({ _tag: "DontRetry", cause: undefined, retryAfter: 3 })).toBeUndefined()
    for (const none of [undefined, null, "boom", 42]) expect(Backoff.retryAfterOf(none)).toBeUndefined()
  })
})

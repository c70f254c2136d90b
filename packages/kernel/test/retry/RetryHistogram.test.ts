import * as Histogram from "@sluice/kernel/retry/RetryHistogram"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const make = (options: Partial<Histogram.HistogramOptions> = {}) =>
  new Histogram.Histogram({
    windowMillis: 10_000,
    buckets: 10,
    maxAttempt: 3,
    threshold: 0.1,
    minRequests: 20,
    ...options
  })

const none = { total: 0, retries: 0, byAttempt: [0, 0, 0, 0] }

describe("Histogram", () => {
  it("records attempt numbers in a sliding window and reports the share of retries", () => {
    const histogram = make()
    for (const attempt of [0, 0, 0, 0, 0, 0, 1, 1, 2, 7]) histogram.record(0, attempt)
    expect(histogram.snapshot(0)).toEqual({
      total: 10,
      retries: 4,
      shareOfRetries: 0.4,
      byAttempt: [6, 2, 1, 1],
      untrusted: none
    })
    for (let i = 0; i < 10; i++) histogram.record(5000, 0)
    expect(histogram.snapshot(5000).shareOfRetries).toBe(0.2)
    // the first ten have left the window
    expect(histogram.snapshot(11_000)).toEqual({
      total: 10,
      retries: 0,
      shareOfRetries: 0,
      byAttempt: [10, 0, 0, 0],
      untrusted: none
    })
    expect(histogram.snapshot(71_000)).toEqual({
      total: 0,
      retries: 0,
      shareOfRetries: 0,
      byAttempt: [0, 0, 0, 0],
      untrusted: none
    })
  })

  it("decides: above the threshold, with enough requests", () => {
    const histogram = make({ threshold: 0.15, minRequests: 20 })
    // Few requests: never rejects, whatever the share.
    for (let i = 0; i < 5; i++) expect(histogram.record(0, 2)).toBe(2)
    expect(histogram.decide(0)).toEqual({ reject: false, shareOfRetries: 1 })
    // 5 retries out of 25: share 0.2 > 0.15.
    for (let i = 0; i < 20; i++) histogram.record(0, 0)
    expect(histogram.decide(0)).toEqual({ reject: true, shareOfRetries: 0.2 })
    // 5 of 50: 0.1, below the threshold.
    for (let i = 0; i < 25; i++) histogram.record(0, 0)
    expect(histogram.decide(0)).toEqual({ reject: false, shareOfRetries: 0.1 })
  })

  it("the threshold compares exact shares: 1 of 10 is not above 0.1, 2 of 19 is", () => {
    const histogram = make({ threshold: 0.1, minRequests: 1 })
    histogram.record(0, 1)
    for (let i = 0; i < 9; i++) histogram.record(0, 0)
    expect(histogram.decide(0).reject).toBe(false)
    histogram.record(0, 2)
    for (let i = 0; i < 8; i++) histogram.record(0, 0)
    expect(histogram.decide(0).reject).toBe(true)
  })

  it("records a malformed attempt as a first try and caps large ones in the last bucket", () => {
    const histogram = make({ maxAttempt: 2 })
    expect(histogram.record(0, Number.NaN)).toBe(0)
    expect(histogram.record(0, -4)).toBe(0)
    expect(histogram.record(0, 1_000_000)).toBe(2)
    expect(histogram.snapshot(0).byAttempt).toEqual([2, 0, 1])
  })

  it("untrusted attempt numbers are counted apart and decide nothing", () => {
    const histogram = make({ threshold: 0.1, minRequests: 10 })
    // 300 untrusted "retries" and nothing else: no decision, neither way
    for (let i = 0; i < 300; i++) expect(histogram.recordUntrusted(0, 2)).toBe(2)
    histogram.recordUntrusted(0, Number.NaN)
    expect(histogram.decide(0).reject).toBe(false)
    const snapshot = histogram.snapshot(0)
    expect(snapshot.total).toBe(0)
    expect(snapshot.untrusted).toEqual({ total: 301, retries: 300, byAttempt: [1, 0, 300, 0] })
    // nor do untrusted first tries dilute trusted retries
    for (let i = 0; i < 10; i++) histogram.record(0, 1)
    for (let i = 0; i < 1000; i++) histogram.recordUntrusted(0, 0)
    expect(histogram.decide(0)).toEqual({ reject: true, shareOfRetries: 1 })
  })

  it("parseAttempt clamps hostile header values to 0", () => {
    expect(Histogram.parseAttempt("0")).toBe(0)
    expect(Histogram.parseAttempt(" 2 ")).toBe(2)
    expect(Histogram.parseAttempt(3)).toBe(3)
    for (const bad of [
      "-1",
      "1.5",
      "NaN",
      "1e999",
      "",
      "abc",
      "999999999",
      null,
      undefined,
      -3,
      2.5,
      Number.NaN
    ]) {
      expect(Histogram.parseAttempt(bad)).toBe(0)
    }
    fc.assert(
      fc.property(fc.string(), (s) => {
        const n = Histogram.parseAttempt(s)
        expect(Number.isInteger(n) && n >= 0 && n < 1e8).toBe(true)
      })
    )
  })

  it("property: the decision is the exact share against the threshold, once there are enough requests", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 200 }),
        fc.integer({ min: 0, max: 100 }).map((n) => n / 100),
        fc.nat({ max: 50 }),
        (attempts, threshold, minRequests) => {
          const histogram = make({ threshold, minRequests })
          for (const attempt of attempts) histogram.record(0, attempt)
          const total = attempts.length
          const retries = attempts.filter((a) => a > 0).length
          // integers: retries / total > p / 100 ⇔ 100 × retries > p × total
          const above = 100 * retries > Math.round(threshold * 100) * total
          expect(histogram.decide(0).reject).toBe(total >= minRequests && total > 0 && above)
        }
      )
    )
  })
})

describe("Histogram.options", () => {
  it("a 10 s window in 10 buckets, attempts up to 3+, 10% of 20 requests; at most 100 attempt buckets", () => {
    const { buckets, maxAttempt, minRequests, threshold, window } = Histogram.options
    expect([
      window.fallback.value,
      buckets.fallback.value,
      maxAttempt.fallback.value,
      threshold.fallback.value,
      minRequests.fallback.value
    ]).toEqual([10_000, 10, 3, 0.1, 20])
    expect(maxAttempt.check(100)).toBeUndefined()
    expect(maxAttempt.check(101)).toBe("expected at most 100 attempt buckets")
    expect(maxAttempt.check(0)).toBe("expected a positive integer, got 0")
    expect(threshold.check(-0.1)).toBe("expected a ratio in [0, 1], got -0.1")
    expect(minRequests.check(0)).toBeUndefined()
    expect(minRequests.check(-1)).toBe("expected a non-negative integer, got -1")
    expect(window.check(Infinity)).toBe("expected a positive, finite duration, got Infinity")
  })

  it("labels attempt buckets by number, the last one as 'n or more'", () => {
    expect([0, 1, 2, 3].map((bucket) => Histogram.bucketLabel(bucket, 3))).toEqual(["0", "1", "2", "3+"])
  })
})

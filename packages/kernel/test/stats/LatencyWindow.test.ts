import * as LatencyWindowModule from "@sluice/kernel/stats/LatencyWindow"
import { LatencyWindow } from "@sluice/kernel/stats/LatencyWindow"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const exactQuantile = (values: ReadonlyArray<number>, q: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(q * (sorted.length - 1))]!
}

// The bound is α; the extra 1e-9 absorbs floating-point rounding of the bucket index.
const withinRelative = (estimate: number, exact: number, alpha: number) =>
  Math.abs(estimate - exact) <= (alpha + 1e-9) * exact

const quantiles = [0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1]

describe("LatencyWindow", () => {
  it("answers median, p99 and count; an empty window answers undefined", () => {
    const latencies = new LatencyWindow({ windowMillis: 60_000 })
    expect(latencies.subWindows).toBe(6)
    expect(latencies.relativeAccuracy).toBe(0.01)
    expect(latencies.quantile(0, 0.5)).toBeUndefined()
    expect(latencies.count(0)).toBe(0)
    for (let i = 1; i <= 100; i++) latencies.record(0, i)
    expect(latencies.count(0)).toBe(100)
    expect(withinRelative(latencies.quantile(0, 0.5)!, 50, 0.01)).toBe(true)
    expect(withinRelative(latencies.quantile(0, 0.99)!, 99, 0.01)).toBe(true)
    expect(withinRelative(latencies.quantile(0, 0)!, 1, 0.01)).toBe(true)
    expect(withinRelative(latencies.quantile(0, 1)!, 100, 0.01)).toBe(true)
    latencies.record(0, 1_000)
    expect(latencies.count(0)).toBe(101)
  })

  it("forgets samples older than the window, one sub-window at a time", () => {
    const latencies = new LatencyWindow({ windowMillis: 60_000, subWindows: 6 })
    for (let i = 0; i < 10; i++) latencies.record(0, 1_000)
    for (let i = 0; i < 10; i++) latencies.record(30_000, 10)
    expect(latencies.count(30_000)).toBe(20)
    expect(withinRelative(latencies.quantile(30_000, 0.99)!, 1_000, 0.01)).toBe(true)
    expect(latencies.count(59_000)).toBe(20)
    // the first sub-window [0, 10 s) falls out at 60 s
    expect(latencies.count(60_000)).toBe(10)
    expect(withinRelative(latencies.quantile(60_000, 0.99)!, 10, 0.01)).toBe(true)
    expect(latencies.count(660_000)).toBe(0)
    expect(latencies.quantile(660_000, 0.5)).toBeUndefined()
    // It keeps working after everything expired.
    latencies.record(660_000, 42)
    expect(withinRelative(latencies.quantile(660_000, 0.5)!, 42, 0.01)).toBe(true)
  })

  it("handles zero, tiny, huge and invalid values and quantiles", () => {
    const w = new LatencyWindow({ windowMillis: 1_000 })
    w.record(0, Number.NaN)
    w.record(0, -1)
    w.record(0, Infinity)
    expect(w.count(0)).toBe(0)
    w.record(0, 0)
    w.record(0, 1e-6)
    w.record(0, 5)
    w.record(0, 1e12)
    expect(w.count(0)).toBe(4)
    expect(w.quantile(0, 0)).toBe(0)
    expect(w.quantile(0, 0.34)).toBe(0)
    expect(withinRelative(w.quantile(0, 0.67)!, 5, 0.01)).toBe(true)
    expect(withinRelative(w.quantile(0, 1)!, 1e8, 0.01)).toBe(true) // clamped
    expect(w.quantile(0, 7)).toBe(w.quantile(0, 1))
    expect(w.quantile(0, -3)).toBe(0)
    expect(w.quantile(0, Number.NaN)).toBeUndefined()
    w.reset()
    expect(w.count(0)).toBe(0)
    expect(w.quantile(0, 0.5)).toBeUndefined()
  })

  it("quantiles stay within the stated relative error of the exact value", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(0.001, 0.01, 0.02, 0.05, 0.2),
        fc.array(
          fc.oneof(
            // log-uniform over [1e-4, 1e8] ms, the trackable range
            fc
              .double({ min: -4, max: 8, noNaN: true })
              .map((e) => Math.min(1e8, Math.max(1e-4, Math.pow(10, e)))),
            fc.double({ min: 1, max: 200, noNaN: true }),
            fc.constantFrom(1, 2, 10, 100, 250)
          ),
          { minLength: 1, maxLength: 400 }
        ),
        (alpha, values) => {
          const w = new LatencyWindow({ windowMillis: 60_000, relativeAccuracy: alpha })
          for (const v of values) w.record(0, v)
          if (w.count(0) !== values.length) return false
          return quantiles.every((q) => withinRelative(w.quantile(0, q)!, exactQuantile(values, q), alpha))
        }
      ),
      { numRuns: 300 }
    )
  })

  it("over a sliding window, equals a brute-force computation on the samples still in it", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 10, max: 5_000 }),
        fc.array(
          fc.tuple(fc.integer({ min: 0, max: 2_000 }), fc.double({ min: 0.01, max: 10_000, noNaN: true })),
          {
            maxLength: 250
          }
        ),
        (subWindows, windowMs, steps) => {
          const w = new LatencyWindow({ windowMillis: windowMs, subWindows })
          const width = windowMs / subWindows
          const samples: Array<[number, number]> = []
          let now = 0
          for (const [dt, v] of steps) {
            now += dt
            w.record(now, v)
            samples.push([now, v])
            const current = Math.floor(now / width)
            const live = samples
              .filter(([t]) => Math.floor(t / width) > current - subWindows)
              .map(([, x]) => x)
            if (w.count(now) !== live.length) return false
            for (const q of [0, 0.5, 0.99, 1]) {
              if (!withinRelative(w.quantile(now, q)!, exactQuantile(live, q), 0.01)) return false
            }
          }
          return true
        }
      ),
      { numRuns: 200 }
    )
  })

  it("rejects bad options with a RangeError naming the field", () => {
    const cases: Array<[ConstructorParameters<typeof LatencyWindow>[0], RegExp]> = [
      [{ windowMillis: 0 }, /windowMillis/],
      [{ windowMillis: -1 }, /windowMillis/],
      [{ windowMillis: Number.NaN }, /windowMillis/],
      [{ windowMillis: Infinity }, /windowMillis/],
      [{ windowMillis: 60_000, subWindows: 0 }, /subWindows/],
      [{ windowMillis: 60_000, subWindows: 2.5 }, /subWindows/],
      [{ windowMillis: 60_000, relativeAccuracy: 0 }, /relativeAccuracy/],
      [{ windowMillis: 60_000, relativeAccuracy: 1 }, /relativeAccuracy/],
      [{ windowMillis: 60_000, relativeAccuracy: Number.NaN }, /relativeAccuracy/]
    ]
    for (const [options, field] of cases) {
      expect(() => new LatencyWindow(options)).toThrow(RangeError)
      expect(() => new LatencyWindow(options)).toThrow(field)
    }
  })
})

describe("LatencyWindow.options", () => {
  it("a positive window in 6 sub-windows, quantiles within 1% by default; the accuracy in (0, 1)", () => {
    const { relativeAccuracy, subWindows, window } = LatencyWindowModule.options
    expect(window.check(Infinity)).toBe("expected a positive, finite duration, got Infinity")
    expect(subWindows.fallback.value).toBe(6)
    expect(subWindows.check(0)).toBe("expected a positive integer, got 0")
    expect(relativeAccuracy.fallback.value).toBe(0.01)
    for (const bad of [0, 1, -0.5, Number.NaN]) {
      expect(relativeAccuracy.check(bad)).toBe(`expected a ratio in (0, 1), got ${bad}`)
    }
    expect(relativeAccuracy.check(0.5)).toBeUndefined()
  })
})

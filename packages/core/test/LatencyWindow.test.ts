import { LatencyWindow, Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, FastCheck as fc, Option, TestClock } from "effect"

const exactQuantile = (values: ReadonlyArray<number>, q: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(q * (sorted.length - 1))]!
}

// The bound is α; the extra 1e-9 absorbs floating-point rounding of the bucket index.
const withinRelative = (estimate: number, exact: number, alpha: number) =>
  Math.abs(estimate - exact) <= (alpha + 1e-9) * exact

const quantiles = [0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1]

describe("LatencyWindow", () => {
  it.effect("answers median, p99 and count; empty windows answer None", () =>
    Effect.gen(function* () {
      const latencies = yield* LatencyWindow.make({ window: "1 minute" })
      expect(yield* LatencyWindow.median(latencies)).toEqual(Option.none())
      expect(yield* LatencyWindow.count(latencies)).toBe(0)
      for (let i = 1; i <= 100; i++) yield* LatencyWindow.record(latencies, i)
      expect(yield* LatencyWindow.count(latencies)).toBe(100)
      const median = Option.getOrThrow(yield* LatencyWindow.median(latencies))
      expect(withinRelative(median, 50, 0.01)).toBe(true)
      const p99 = Option.getOrThrow(yield* LatencyWindow.p99(latencies))
      expect(withinRelative(p99, 99, 0.01)).toBe(true)
      const p0 = Option.getOrThrow(yield* latencies.pipe(LatencyWindow.quantile(0)))
      expect(withinRelative(p0, 1, 0.01)).toBe(true)
      const p100 = Option.getOrThrow(yield* LatencyWindow.quantile(latencies, 1))
      expect(withinRelative(p100, 100, 0.01)).toBe(true)
      yield* latencies.pipe(LatencyWindow.record(1_000))
      expect(yield* LatencyWindow.count(latencies)).toBe(101)
    })
  )

  it.effect("forgets samples older than the window, one sub-window at a time", () =>
    Effect.gen(function* () {
      const latencies = yield* LatencyWindow.make({ window: "60 seconds", subWindows: 6 })
      for (let i = 0; i < 10; i++) yield* LatencyWindow.record(latencies, 1_000)
      yield* TestClock.adjust("30 seconds")
      for (let i = 0; i < 10; i++) yield* LatencyWindow.record(latencies, 10)
      expect(yield* LatencyWindow.count(latencies)).toBe(20)
      const p99 = Option.getOrThrow(yield* LatencyWindow.p99(latencies))
      expect(withinRelative(p99, 1_000, 0.01)).toBe(true)
      yield* TestClock.adjust("29 seconds")
      expect(yield* LatencyWindow.count(latencies)).toBe(20)
      yield* TestClock.adjust("1 second") // the first sub-window [0, 10 s) falls out at 60 s
      expect(yield* LatencyWindow.count(latencies)).toBe(10)
      const now = Option.getOrThrow(yield* LatencyWindow.p99(latencies))
      expect(withinRelative(now, 10, 0.01)).toBe(true)
      yield* TestClock.adjust("10 minutes")
      expect(yield* LatencyWindow.count(latencies)).toBe(0)
      expect(yield* LatencyWindow.median(latencies)).toEqual(Option.none())
      // It keeps working after everything expired.
      yield* LatencyWindow.record(latencies, 42)
      const median = Option.getOrThrow(yield* LatencyWindow.median(latencies))
      expect(withinRelative(median, 42, 0.01)).toBe(true)
    })
  )

  it("handles zero, tiny, huge and invalid values and quantiles", () => {
    const w = LatencyWindow.unsafeMake({ window: 1_000 })
    w.unsafeRecord(0, Number.NaN)
    w.unsafeRecord(0, -1)
    w.unsafeRecord(0, Infinity)
    expect(w.unsafeCount(0)).toBe(0)
    w.unsafeRecord(0, 0)
    w.unsafeRecord(0, 1e-6)
    w.unsafeRecord(0, 5)
    w.unsafeRecord(0, 1e12)
    expect(w.unsafeCount(0)).toBe(4)
    expect(w.unsafeQuantile(0, 0)).toBe(0)
    expect(w.unsafeQuantile(0, 0.34)).toBe(0)
    expect(withinRelative(w.unsafeQuantile(0, 0.67)!, 5, 0.01)).toBe(true)
    expect(withinRelative(w.unsafeQuantile(0, 1)!, 1e8, 0.01)).toBe(true) // clamped
    expect(w.unsafeQuantile(0, 7)).toBe(w.unsafeQuantile(0, 1))
    expect(w.unsafeQuantile(0, -3)).toBe(0)
    expect(w.unsafeQuantile(0, Number.NaN)).toBeUndefined()
    w.unsafeReset()
    expect(w.unsafeCount(0)).toBe(0)
    expect(w.unsafeQuantile(0, 0.5)).toBeUndefined()
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
          const w = LatencyWindow.unsafeMake({ window: "1 minute", relativeAccuracy: alpha })
          for (const v of values) w.unsafeRecord(0, v)
          if (w.unsafeCount(0) !== values.length) return false
          return quantiles.every((q) =>
            withinRelative(w.unsafeQuantile(0, q)!, exactQuantile(values, q), alpha)
          )
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
          const w = LatencyWindow.unsafeMake({ window: windowMs, subWindows })
          const width = windowMs / subWindows
          const samples: Array<[number, number]> = []
          let now = 0
          for (const [dt, v] of steps) {
            now += dt
            w.unsafeRecord(now, v)
            samples.push([now, v])
            const current = Math.floor(now / width)
            const live = samples
              .filter(([t]) => Math.floor(t / width) > current - subWindows)
              .map(([, x]) => x)
            if (w.unsafeCount(now) !== live.length) return false
            for (const q of [0, 0.5, 0.99, 1]) {
              if (!withinRelative(w.unsafeQuantile(now, q)!, exactQuantile(live, q), 0.01)) return false
            }
          }
          return true
        }
      ),
      { numRuns: 200 }
    )
  })

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const cases: Array<[LatencyWindow.LatencyWindowOptions, RegExp]> = [
        [{ window: 0 }, /\["window"\]/],
        [{ window: -1 }, /\["window"\]/],
        [{ window: Number.NaN }, /\["window"\]/],
        [{ window: "1 minute", subWindows: 0 }, /\["subWindows"\]/],
        [{ window: "1 minute", subWindows: 2.5 }, /\["subWindows"\]/],
        [{ window: "1 minute", relativeAccuracy: 0 }, /\["relativeAccuracy"\]/],
        [{ window: "1 minute", relativeAccuracy: 1 }, /\["relativeAccuracy"\]/],
        [{ window: "1 minute", relativeAccuracy: Number.NaN }, /\["relativeAccuracy"\]/]
      ]
      for (const [options, field] of cases) {
        const exit = yield* Effect.exit(LatencyWindow.make(options))
        expect(Exit.isFailure(exit)).toBe(true)
        if (Exit.isFailure(exit)) {
          const error = Cause.failureOption(exit.cause)
          expect(Option.isSome(error) && error.value instanceof Options.InvalidOptions).toBe(true)
          if (Option.isSome(error)) expect(error.value.message).toMatch(field)
        }
      }
      expect(() => LatencyWindow.unsafeMake({ window: Duration.zero })).toThrow(/window/)
    })
  )
})

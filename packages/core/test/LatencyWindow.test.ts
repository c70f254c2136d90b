import { LatencyWindow, Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Option } from "effect"
import { TestClock } from "effect/testing"

// The bound is α; the extra 1e-9 absorbs floating-point rounding of the bucket index.
const withinRelative = (estimate: number, exact: number, alpha: number) =>
  Math.abs(estimate - exact) <= (alpha + 1e-9) * exact

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

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const cases: Array<[LatencyWindow.LatencyWindowOptions, RegExp]> = [
        [{ window: 0 }, /[\n.]window: /],
        [{ window: -1 }, /[\n.]window: /],
        [{ window: Number.NaN }, /[\n.]window: /],
        [{ window: "1 minute", subWindows: 0 }, /[\n.]subWindows: /],
        [{ window: "1 minute", subWindows: 2.5 }, /[\n.]subWindows: /],
        [{ window: "1 minute", relativeAccuracy: 0 }, /[\n.]relativeAccuracy: /],
        [{ window: "1 minute", relativeAccuracy: 1 }, /[\n.]relativeAccuracy: /],
        [{ window: "1 minute", relativeAccuracy: Number.NaN }, /[\n.]relativeAccuracy: /]
      ]
      for (const [options, field] of cases) {
        const exit = yield* Effect.exit(LatencyWindow.make(options))
        expect(Exit.isFailure(exit)).toBe(true)
        if (Exit.isFailure(exit)) {
          const error = Cause.findErrorOption(exit.cause)
          expect(Option.isSome(error) && error.value instanceof Options.InvalidOptions).toBe(true)
          if (Option.isSome(error)) expect(error.value.message).toMatch(field)
        }
      }
      expect(() => LatencyWindow.makeUnsafe({ window: Duration.zero })).toThrow(/window/)
    })
  )
})

/**
 * go-zero #5011: the SRE throttle counts a request before its call, and a request and its
 * outcome share one window. Ported from the case (a 10 s window; calls that take
 * longer than it): in flight, a request is counted at once; a burst in flight is not read as
 * rejections; an outcome that comes after its request left the window counts nothing.
 */
import { AdaptiveThrottle } from "@sluice/adaptive"
import { Errors } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"

const WINDOW_MS = 10_000

describe("AdaptiveThrottle: a request is counted before its call (go-zero #5011)", () => {
  it.effect("calls in flight are requests at once, neither accepts nor rejections", () =>
    Effect.gen(function* () {
      const throttle = yield* AdaptiveThrottle.make({ window: WINDOW_MS, buckets: 10 })
      // A burst of 50 calls from a cold client, all in flight.
      const fibers = yield* Effect.forEach(Array.from({ length: 50 }), () =>
        Effect.forkChild(throttle.withThrottle(Effect.sleep(2_000), "backend"))
      )
      yield* TestClock.adjust(1)
      expect(throttle.statsUnsafe("backend")).toEqual({ requests: 50, accepts: 0, inFlight: 50 })
      // Not rejections: the 51st call is not throttled (the attempt that was reverted made it so).
      expect(throttle.probabilityUnsafe("backend", "SHEDDABLE")).toBe(0)
      yield* TestClock.adjust(2_000)
      yield* Effect.forEach(fibers, Fiber.join, { discard: true })
      expect(throttle.statsUnsafe("backend")).toEqual({ requests: 50, accepts: 50, inFlight: 0 })
    })
  )

  it.effect("a backend that rejects while calls are in flight: the formula runs over settled requests", () =>
    Effect.gen(function* () {
      const throttle = yield* AdaptiveThrottle.make({ window: WINDOW_MS, buckets: 10, minRequestRate: 0 })
      // 20 hang while 10 are accepted and 10 rejected quickly.
      const hanging = yield* Effect.forEach(Array.from({ length: 20 }), () =>
        Effect.forkChild(throttle.withThrottle(Effect.sleep(5_000), "backend"))
      )
      yield* TestClock.adjust(1)
      for (let i = 0; i < 10; i++) {
        yield* throttle.withThrottle(Effect.void, "backend")
        yield* Effect.exit(
          throttle.withThrottle(Effect.fail(new Errors.Overloaded({ reason: "busy" })), "backend")
        )
      }
      expect(throttle.statsUnsafe("backend")).toEqual({ requests: 40, accepts: 10, inFlight: 20 })
      // Over the 20 settled: (20 − 1.5 × 10) / (20 + 1) for SHEDDABLE. Counting the 20 in flight
      // as requests without accepts would make it (40 − 15) / 41.
      expect(throttle.probabilityUnsafe("backend", "SHEDDABLE")).toBeCloseTo(5 / 21, 10)
      yield* TestClock.adjust(5_000)
      yield* Effect.forEach(hanging, Fiber.join, { discard: true })
      expect(throttle.statsUnsafe("backend")).toEqual({ requests: 40, accepts: 30, inFlight: 0 })
    })
  )

  it.effect("an outcome that comes after its request left the window counts nothing", () =>
    Effect.gen(function* () {
      const throttle = yield* AdaptiveThrottle.make({ window: WINDOW_MS, buckets: 10, minRequestRate: 0 })
      // Longer than the window (go-zero's 10 s window against a longer timeout).
      const slow = yield* Effect.forkChild(throttle.withThrottle(Effect.sleep(15_000), "backend"))
      yield* TestClock.adjust(11_000)
      // The request has left the window with its bucket: nothing in flight is counted any more.
      expect(throttle.statsUnsafe("backend")).toEqual({ requests: 0, accepts: 0, inFlight: 0 })
      // Meanwhile the backend rejects: 5 drops in the window.
      for (let i = 0; i < 5; i++)
        yield* Effect.exit(
          throttle.withThrottle(Effect.fail(new Errors.Overloaded({ reason: "busy" })), "backend")
        )
      const before = throttle.probabilityUnsafe("backend", "CRITICAL")
      expect(before).toBeCloseTo(5 / 6, 10)
      yield* TestClock.adjust(4_000)
      yield* Fiber.join(slow)
      // Its accept would have no request beside it: it does not lower the probability.
      expect(throttle.statsUnsafe("backend")).toEqual({ requests: 5, accepts: 0, inFlight: 0 })
      expect(throttle.probabilityUnsafe("backend", "CRITICAL")).toBe(before)
    })
  )
})

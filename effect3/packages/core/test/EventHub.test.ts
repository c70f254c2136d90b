import { CircuitBreaker } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Fiber, Stream, TestClock } from "effect"

describe("policy event hubs", () => {
  it.effect("the circuit breaker's changes keep the newest when a subscriber falls behind", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ name: "db", consecutiveFailures: 1 })
      const resume = yield* Deferred.make<void>()
      const received: Array<number> = []
      const subscriber = yield* Effect.fork(
        Stream.runForEach(breaker.stateChanges, (change) => {
          received.push(change.at)
          return received.length === 1 ? Deferred.await(resume) : Effect.void
        })
      )
      for (let i = 0; received.length === 0 && i < 100; i++) {
        yield* breaker.isolate
        yield* breaker.reset
        yield* Effect.yieldNow()
      }
      expect(received.length).toBeGreaterThan(0)
      // 300 changes, one per millisecond, while the subscriber does not read (256 places)
      for (let i = 0; i < 150; i++) {
        yield* TestClock.adjust("1 millis")
        yield* breaker.isolate
        yield* TestClock.adjust("1 millis")
        yield* breaker.reset
      }
      const last = yield* Clock.currentTimeMillis
      yield* Deferred.succeed(resume, undefined)
      for (let i = 0; received.at(-1) !== last && i < 1000; i++) yield* Effect.yieldNow()
      yield* Fiber.interrupt(subscriber)
      expect(received.at(-1)).toBe(last)
      expect(received.length).toBeLessThan(300)
    })
  )
})

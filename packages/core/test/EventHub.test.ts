import { CircuitBreaker } from "@sluice/core"
import * as EventHub from "@sluice/core/shared/EventHub"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Fiber, PubSub, Stream } from "effect"
import { TestClock } from "effect/testing"

describe("EventHub", () => {
  it.effect("a subscriber with no room left loses its oldest events, not the newest", () =>
    Effect.gen(function* () {
      const hub = EventHub.makeUnsafe<number>(2)
      const subscription = yield* PubSub.subscribe(hub)
      for (let i = 0; i < 5; i++) EventHub.publish(hub, i)
      expect(yield* PubSub.takeAll(subscription)).toEqual([3, 4])
      // with room again, nothing is lost
      EventHub.publish(hub, 5)
      expect(yield* PubSub.takeAll(subscription)).toEqual([5])
    }).pipe(Effect.scoped)
  )

  it.effect("publishing to a hub that was shut down does nothing", () =>
    Effect.gen(function* () {
      const hub = yield* EventHub.make<number>(1)
      yield* PubSub.shutdown(hub)
      expect(() => EventHub.publish(hub, 1)).not.toThrow()
    })
  )

  it.effect("the circuit breaker's changes keep the newest when a subscriber falls behind", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ name: "db", consecutiveFailures: 1 })
      const resume = yield* Deferred.make<void>()
      const received: Array<number> = []
      const subscriber = yield* Effect.forkChild(
        Stream.runForEach(breaker.stateChanges, (change) => {
          received.push(change.at)
          return received.length === 1 ? Deferred.await(resume) : Effect.void
        })
      )
      for (let i = 0; received.length === 0 && i < 100; i++) {
        yield* breaker.isolate
        yield* breaker.reset
        yield* Effect.yieldNow
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
      for (let i = 0; received.at(-1) !== last && i < 1000; i++) yield* Effect.yieldNow
      yield* Fiber.interrupt(subscriber)
      expect(received.at(-1)).toBe(last)
      expect(received.length).toBeLessThan(300)
    })
  )
})

import { it } from "@effect/vitest"
import {
  AdaptiveThrottle,
  ConcurrencyLimiter,
  LimitAlgorithm,
  LoadShedder,
  ThresholdMonitor
} from "@sluice/adaptive"
import { Criticality, Errors } from "@sluice/core"
import { Deferred, Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect } from "vitest"

/** Subscribes to `events` (taking `n`) before `trigger` runs, then returns what arrived. */
const collect = <A, E, R>(events: Stream.Stream<A>, n: number, trigger: Effect.Effect<unknown, E, R>) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.forkChild(Stream.runCollect(Stream.take(events, n)))
    for (let i = 0; i < 5; i++) yield* Effect.yieldNow
    yield* trigger
    return yield* Fiber.join(fiber)
  })

describe("events (conventions §8)", () => {
  it.effect("the throttle reports each local refusal", () =>
    Effect.gen(function* () {
      const throttle = yield* AdaptiveThrottle.make({ minRequestRate: 0 })
      const drop = Effect.fail(new Errors.Overloaded({ reason: "server" }))
      const events = yield* collect(
        throttle.events,
        1,
        Effect.forEach(Array.from({ length: 200 }), () => Effect.result(throttle.withThrottle(drop, "users")))
      )
      expect(events[0]).toMatchObject({ _tag: "Throttled", key: "users", criticality: "CRITICAL" })
      expect(events[0]!.probability).toBeGreaterThan(0)
    })
  )

  it.effect("the shedder reports each shed request", () =>
    Effect.gen(function* () {
      const shedder = yield* LoadShedder.make({ capacity: 1, smoothing: "1 second", bound: false })
      for (let i = 0; i < 3; i++) yield* Effect.forkChild(shedder.withShedder(Effect.never))
      yield* Effect.yieldNow
      yield* TestClock.adjust("20 seconds")
      const events = yield* collect(
        shedder.events,
        1,
        Effect.result(shedder.withShedder(Effect.void).pipe(Criticality.withCriticality("SHEDDABLE")))
      )
      expect(events[0]).toMatchObject({ _tag: "Shed", shedder: "default", criticality: "SHEDDABLE" })
    })
  )

  it.effect("the limiter reports refusals with their reason", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({
        key: "db",
        maxQueue: 0,
        algorithm: () => LimitAlgorithm.fixed(1)
      })
      yield* Effect.forkChild(limiter.withLimiter(Effect.never))
      yield* Effect.yieldNow
      const events = yield* collect(limiter.events, 1, Effect.result(limiter.withLimiter(Effect.void)))
      expect(events).toEqual([{ _tag: "Rejected", key: "db", reason: "limit" }])

      const service = yield* ConcurrencyLimiter.makeService({
        maxQueue: 1,
        maxWait: "1 second",
        algorithm: () => LimitAlgorithm.fixed(1)
      })
      yield* Effect.forkChild(service.withLimiter(Effect.never, "api"))
      yield* Effect.yieldNow
      const timedOut = yield* collect(
        service.events,
        1,
        Effect.gen(function* () {
          const waiter = yield* Effect.forkChild(Effect.result(service.withLimiter(Effect.void, "api")))
          yield* Effect.yieldNow
          yield* TestClock.adjust("2 seconds")
          yield* Fiber.join(waiter)
        })
      )
      expect(timedOut).toEqual([{ _tag: "Rejected", key: "api", reason: "queue-timeout" }])
    })
  )

  it.effect("a subscriber that falls behind loses the oldest events, not the newest", () =>
    Effect.gen(function* () {
      const monitor = yield* ThresholdMonitor.make({ thresholds: { latency: "100 millis" } })
      // one crossing per operation: each event names its own
      const cross = (operation: string) =>
        Effect.andThen(monitor.record(operation, "500 millis"), monitor.exceeded(operation))
      const resume = yield* Deferred.make<void>()
      const received: Array<string> = []
      const subscriber = yield* Effect.forkChild(
        Stream.runForEach(monitor.events, (event) => {
          received.push(event.operation)
          // stops reading after its first event until told to go on
          return received.length === 1 ? Deferred.await(resume) : Effect.void
        })
      )
      for (let i = 0; received.length === 0 && i < 100; i++) {
        yield* cross(`warm-up ${i}`)
        yield* Effect.yieldNow
      }
      expect(received.length).toBe(1)
      // 300 events while it does not read: more than its 256 places
      for (let i = 0; i < 300; i++) yield* cross(`op${i}`)
      yield* Deferred.succeed(resume, undefined)
      for (let i = 0; received.at(-1) !== "op299" && i < 1000; i++) yield* Effect.yieldNow
      yield* Fiber.interrupt(subscriber)
      const ops = received.slice(1).map((operation) => Number(operation.slice(2)))
      expect(ops.at(-1)).toBe(299)
      expect(ops.length).toBeLessThan(300)
      expect(ops).toEqual([...ops].sort((a, b) => a - b))
    })
  )

  it.effect("the threshold monitor reports crossings both ways", () =>
    Effect.gen(function* () {
      const monitor = yield* ThresholdMonitor.make({ thresholds: { latency: "100 millis" } })
      const events = yield* collect(
        monitor.events,
        2,
        Effect.gen(function* () {
          yield* monitor.record("save", "500 millis")
          yield* monitor.exceeded("save")
          yield* monitor.exceeded("save") // no change, no event
          yield* monitor.setThresholds({ latency: "1 second" })
          yield* monitor.exceeded("save")
        })
      )
      expect(events.map((e) => [e._tag, e.operation, e.exceeded])).toEqual([
        ["Crossing", "save", true],
        ["Crossing", "save", false]
      ])
    })
  )
})

import { ConcurrencyLimiter, CongestionWindow, Pacer } from "@sluice/adaptive"
import { Errors, Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Exit, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import { metricValue } from "./metricSnapshot.js"

/**
 * Forks `n` paced calls that record the Clock time at which they depart and then take
 * 100 ms (the `initialRtt` of the tests, so the measured round trip agrees with it).
 */
const departures = (pacer: Pacer.Pacer, n: number) =>
  Effect.gen(function* () {
    const times: Array<number> = []
    const call = Effect.flatMap(Clock.currentTimeMillis, (t) =>
      Effect.andThen(
        Effect.sync(() => times.push(t)),
        Effect.sleep("100 millis")
      )
    )
    const fibers: Array<Fiber.Fiber<void, Errors.Overloaded>> = []
    for (let i = 0; i < n; i++) {
      fibers.push(yield* Effect.forkChild(pacer.withPacer(call)))
      // let it reserve its departure before the next one arrives
      yield* Effect.yieldNow
    }
    return { times, fibers }
  })

const failureOf = <A, E>(exit: Exit.Exit<A, E>): unknown => Option.getOrUndefined(Exit.findErrorOption(exit))

describe("Pacer", () => {
  it("has the documented defaults", () => {
    const pacer = Pacer.makeUnsafe({ limit: () => 10 })
    expect(pacer.options.gain).toBe(1)
    expect(pacer.options.slowStartGain).toBe(1.25)
    expect(pacer.options.smoothing).toBe(0.125)
    expect(pacer.options.maxQueue).toBe(1000)
    expect(pacer.key).toBe("default")
    expect(pacer.srtt).toBeUndefined()
    // nothing measured yet: nothing to pace with
    expect(pacer.interval).toBe(0)
  })

  it.effect("bad options fail with InvalidOptions naming the field", () =>
    Effect.gen(function* () {
      const cases: Array<[unknown, RegExp]> = [
        [{ limit: 10 }, /limit/],
        [{}, /limit/],
        [{ limit: () => 1, gain: 0 }, /gain/],
        [{ limit: () => 1, slowStartGain: -1 }, /slowStartGain/],
        [{ limit: () => 1, smoothing: 0 }, /smoothing/],
        [{ limit: () => 1, smoothing: 1.5 }, /smoothing/],
        [{ limit: () => 1, initialRtt: "0 millis" }, /initialRtt/],
        [{ limit: () => 1, maxQueue: 1.5 }, /maxQueue/],
        [{ limit: () => 1, slowStart: true }, /slowStart/]
      ]
      for (const [options, field] of cases) {
        const error = failureOf(yield* Effect.exit(Pacer.make(options as Pacer.PacerOptions)))
        expect(error).toBeInstanceOf(Options.InvalidOptions)
        expect((error as Options.InvalidOptions).message).toMatch(field)
        expect(() => Pacer.makeUnsafe(options as Pacer.PacerOptions)).toThrow(field)
      }
    })
  )

  it.effect("spreads a window over one smoothed round trip: departures every srtt / limit", () =>
    Effect.gen(function* () {
      const pacer = yield* Pacer.make({ limit: () => 10, initialRtt: "100 millis" })
      expect(pacer.interval).toBe(10)
      const { fibers, times } = yield* departures(pacer, 5)
      expect(times).toEqual([0]) // the first leaves at once
      expect(pacer.queued).toBe(4)
      yield* TestClock.adjust("200 millis")
      yield* Effect.forEach(fibers, Fiber.join, { discard: true })
      expect(times).toEqual([0, 10, 20, 30, 40])
      expect(pacer.queued).toBe(0)
    })
  )

  it.effect(
    "measures the round trip of successes with the Clock (RFC 6298 smoothing); failures do not count",
    () =>
      Effect.gen(function* () {
        const pacer = yield* Pacer.make({ limit: () => 4 })
        const slow = (ms: number) => Effect.sleep(Duration.millis(ms))
        const first = yield* Effect.forkChild(pacer.withPacer(slow(80)))
        yield* TestClock.adjust("80 millis")
        yield* Fiber.join(first)
        expect(pacer.srtt).toBe(80)
        expect(pacer.interval).toBe(20)
        // a fast failure (a rejection) must not make the pacer send faster
        const failing = yield* Effect.forkChild(
          pacer.withPacer(Effect.andThen(slow(5), Effect.fail(new Errors.Overloaded({ reason: "busy" }))))
        )
        yield* TestClock.adjust("25 millis")
        expect(Exit.isFailure(yield* Fiber.await(failing))).toBe(true)
        expect(pacer.srtt).toBe(80)
        const second = yield* Effect.forkChild(pacer.withPacer(slow(160)))
        yield* TestClock.adjust("200 millis")
        yield* Fiber.join(second)
        expect(pacer.srtt).toBe(80 + 0.125 * (160 - 80))
        pacer.observeUnsafe(Number.NaN)
        pacer.observeUnsafe(-1)
        expect(pacer.srtt).toBe(90)
      })
  )

  it.effect("follows the limit as it changes, and does not pace an unusable limit", () =>
    Effect.gen(function* () {
      let limit = 10
      const pacer = yield* Pacer.make({ limit: () => limit, initialRtt: "100 millis" })
      expect(pacer.interval).toBe(10)
      limit = 50
      expect(pacer.interval).toBe(2)
      for (const bad of [0, -1, Number.NaN, Infinity]) {
        limit = bad
        expect(pacer.interval).toBe(0)
      }
    })
  )

  it.effect("uses slowStartGain while slowStart() holds", () =>
    Effect.gen(function* () {
      let slowStart = true
      const pacer = yield* Pacer.make({
        limit: () => 10,
        slowStart: () => slowStart,
        initialRtt: "100 millis",
        slowStartGain: 2,
        gain: 1.25
      })
      expect(pacer.gain).toBe(2)
      expect(pacer.interval).toBe(5)
      slowStart = false
      expect(pacer.gain).toBe(1.25)
      expect(pacer.interval).toBe(8)
    })
  )

  it.effect(
    "an idle pacer banks no credit: after a pause one departure leaves at once, the next one interval later",
    () =>
      Effect.gen(function* () {
        const pacer = yield* Pacer.make({ limit: () => 10, initialRtt: "100 millis" })
        const a = yield* departures(pacer, 2)
        yield* TestClock.adjust("1 second")
        yield* Effect.forEach(a.fibers, Fiber.join, { discard: true })
        expect(a.times).toEqual([0, 10])
        const b = yield* departures(pacer, 3)
        expect(b.times).toEqual([1000])
        yield* TestClock.adjust("200 millis")
        yield* Effect.forEach(b.fibers, Fiber.join, { discard: true })
        expect(b.times).toEqual([1000, 1010, 1020])
      })
  )

  it.effect("a full queue refuses with Overloaded without running the effect", () =>
    Effect.gen(function* () {
      const pacer = yield* Pacer.make({ limit: () => 10, initialRtt: "100 millis", maxQueue: 2, key: "q" })
      const { fibers, times } = yield* departures(pacer, 3)
      expect(pacer.queued).toBe(2)
      let ran = false
      const refused = yield* Effect.exit(pacer.withPacer(Effect.sync(() => (ran = true))))
      expect(ran).toBe(false)
      const error = failureOf(refused)
      expect(error).toBeInstanceOf(Errors.Overloaded)
      expect((error as Errors.Overloaded).reason).toBe("pacer queue full")
      const rejected = yield* metricValue("sluice_pacer_rejected", { key: "q" })
      expect(rejected.count).toBe(1)
      yield* TestClock.adjust("200 millis")
      yield* Effect.forEach(fibers, Fiber.join, { discard: true })
      // the refusal took no slot
      expect(times).toEqual([0, 10, 20])
      expect(pacer.nextDeparture).toBe(30)
    })
  )

  it.effect("maxQueue 0 never waits", () =>
    Effect.gen(function* () {
      const pacer = yield* Pacer.make({ limit: () => 10, initialRtt: "100 millis", maxQueue: 0 })
      expect(Exit.isSuccess(yield* Effect.exit(pacer.withPacer(Effect.void)))).toBe(true)
      expect(failureOf(yield* Effect.exit(pacer.withPacer(Effect.void)))).toBeInstanceOf(Errors.Overloaded)
    })
  )

  it.effect("interrupting a waiter frees its place; the last reservation gives its slot back", () =>
    Effect.gen(function* () {
      const pacer = yield* Pacer.make({ limit: () => 10, initialRtt: "100 millis" })
      const { fibers, times } = yield* departures(pacer, 3)
      expect(pacer.queued).toBe(2)
      expect(pacer.nextDeparture).toBe(30)
      // the last one gives back its slot
      yield* Fiber.interrupt(fibers[2]!)
      expect(pacer.queued).toBe(1)
      expect(pacer.nextDeparture).toBe(20)
      // an earlier one leaves a gap: later reservations keep their times
      const late = yield* departures(pacer, 1)
      yield* Fiber.interrupt(fibers[1]!)
      expect(pacer.queued).toBe(1)
      expect(pacer.nextDeparture).toBe(30)
      yield* TestClock.adjust("200 millis")
      yield* Fiber.join(late.fibers[0]!)
      expect(times).toEqual([0])
      expect(late.times).toEqual([20])
      expect(pacer.queued).toBe(0)
      // interrupting a departed call does not touch the queue
      const running = yield* Effect.forkChild(pacer.withPacer(Effect.never))
      yield* Fiber.interrupt(running)
      expect(pacer.queued).toBe(0)
    })
  )

  it.effect("forLimiter: spreads the limiter's window, with slowStart from the congestion window", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({
        key: "paced-backend",
        algorithm: CongestionWindow.factory({ initial: 10, ssthresh: 12 })
      })
      const pacer = yield* Pacer.forLimiter(limiter, { initialRtt: "100 millis", slowStartGain: 2 })
      expect(pacer.key).toBe("paced-backend")
      expect(pacer.gain).toBe(2) // cwnd 10 < ssthresh 12
      expect(pacer.interval).toBe(5)
      // grow the window past ssthresh: successes with the window in use
      const work = Effect.sleep("10 millis")
      for (let round = 0; round < 3; round++) {
        const fibers = yield* Effect.forEach(Array.from({ length: 12 }), () =>
          Effect.forkChild(limiter.withLimiter(pacer.withPacer(work)))
        )
        yield* TestClock.adjust("200 millis")
        yield* Effect.forEach(fibers, Fiber.join, { discard: true })
      }
      expect(limiter.limit).toBeGreaterThanOrEqual(12)
      expect(pacer.gain).toBe(1)
      expect(pacer.srtt).toBe(10)
      expect(pacer.interval).toBeCloseTo(10 / limiter.limit, 12)
      const delays = yield* metricValue("sluice_pacer_delay_ms", { key: "paced-backend" })
      expect(delays.count).toBe(36)
      expect(delays.max).toBeGreaterThan(0)
    })
  )

  it.effect("forLimiter without a congestion window paces at the plain gain", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({
        key: "fixed",
        algorithm: () => ({ name: "fixed", limit: 4, onSample: () => 4 })
      })
      const pacer = yield* Pacer.forLimiter(limiter, { initialRtt: "100 millis", gain: 2 })
      expect(pacer.gain).toBe(2)
      expect(pacer.interval).toBe(12.5)
    })
  )

  it.effect("property: concurrent departures are spaced by the interval and leave in arrival order", () =>
    Effect.gen(function* () {
      const samples = fc.sample(
        fc.record({
          limit: fc.integer({ min: 1, max: 200 }),
          rtt: fc.integer({ min: 1, max: 2000 }),
          n: fc.integer({ min: 1, max: 20 })
        }),
        { numRuns: 12, seed: 7 }
      )
      for (const { limit, n, rtt } of samples) {
        const pacer = yield* Pacer.make({ limit: () => limit, initialRtt: Duration.millis(rtt) })
        const start = yield* Clock.currentTimeMillis
        const order: Array<number> = []
        const times: Array<number> = []
        const fibers: Array<Fiber.Fiber<number, Errors.Overloaded>> = []
        for (let i = 0; i < n; i++) {
          const call = Effect.flatMap(Clock.currentTimeMillis, (t) =>
            Effect.sync(() => {
              order.push(i)
              return times.push(t - start)
            })
          ).pipe(Effect.tap(Effect.sleep(Duration.millis(rtt))))
          fibers.push(yield* Effect.forkChild(pacer.withPacer(call)))
          yield* Effect.yieldNow
        }
        yield* TestClock.adjust(Duration.millis(Math.ceil((n * rtt) / limit) + rtt + 1))
        yield* Effect.forEach(fibers, Fiber.join, { discard: true })
        expect(order).toEqual(Array.from({ length: n }, (_, i) => i))
        const interval = rtt / limit
        times.forEach((t, i) => expect(Math.abs(t - i * interval)).toBeLessThan(1))
        expect(pacer.queued).toBe(0)
        yield* TestClock.adjust(Duration.millis(rtt * 2))
      }
    })
  )
})

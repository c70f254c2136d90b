import { LoadShedder } from "@sluice/adaptive"
import { Criticality, Errors, Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Metric, Option } from "effect"
import { TestClock } from "effect/testing"

type Level = Criticality.Criticality

/** Starts `n` guarded fibers (at CRITICAL_PLUS, so they are admitted) that hold until `gate` opens. */
const hold = (shedder: LoadShedder.Service, n: number, gate: Deferred.Deferred<void>) =>
  Effect.gen(function* () {
    const fibers: Array<Fiber.Fiber<void, Errors.Overloaded>> = []
    for (let i = 0; i < n; i++) {
      fibers.push(
        yield* Effect.forkChild(
          shedder.withShedder(Deferred.await(gate)).pipe(Criticality.withCriticality("CRITICAL_PLUS"))
        )
      )
    }
    yield* Effect.yieldNow
    return fibers
  })

/** Which levels are admitted right now (each probe completes at once, so it does not move utilization). */
const admitted = (shedder: LoadShedder.Service) =>
  Effect.gen(function* () {
    const out: Array<Level> = []
    for (const level of Criticality.levels) {
      const exit = yield* Effect.exit(
        shedder.withShedder(Effect.void).pipe(Criticality.withCriticality(level))
      )
      if (Exit.isSuccess(exit)) out.push(level)
    }
    return out
  })

describe("LoadShedder", () => {
  it.effect("sheds by criticality, SHEDDABLE first and CRITICAL_PLUS last", () =>
    Effect.gen(function* () {
      const shedder = yield* LoadShedder.make({ capacity: 20, smoothing: "1 second", bound: false })
      const gate = yield* Deferred.make<void>()
      expect(yield* admitted(shedder)).toEqual(["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE"])
      // 17 in flight for 20 s (20 time constants): utilization 0.85.
      yield* hold(shedder, 17, gate)
      expect(shedder.activeUnsafe()).toBe(17)
      yield* TestClock.adjust("20 seconds")
      expect(shedder.utilizationUnsafe()).toBeCloseTo(0.85, 6)
      expect(yield* admitted(shedder)).toEqual(["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS"])
      yield* hold(shedder, 2, gate) // 0.95
      yield* TestClock.adjust("20 seconds")
      expect(yield* admitted(shedder)).toEqual(["CRITICAL_PLUS", "CRITICAL"])
      yield* hold(shedder, 2, gate) // 1.05
      yield* TestClock.adjust("20 seconds")
      expect(yield* admitted(shedder)).toEqual(["CRITICAL_PLUS"])
      yield* hold(shedder, 2, gate) // 1.15
      yield* TestClock.adjust("20 seconds")
      expect(shedder.activeUnsafe()).toBe(23)
      expect(yield* admitted(shedder)).toEqual([])
      const exit = yield* Effect.exit(shedder.withShedder(Effect.void))
      // Effect 4 annotates a failure with the span it failed in: compare the failure itself.
      expect(Exit.isFailure(exit) && exit.cause.reasons.length).toBe(1)
      expect(Option.getOrUndefined(Exit.findErrorOption(exit))).toStrictEqual(
        new Errors.Overloaded({ reason: "shed", retryAfter: Duration.seconds(1), origin: "local" })
      )
      yield* Deferred.succeed(gate, void 0)
      yield* Effect.yieldNow
      expect(shedder.activeUnsafe()).toBe(0)
    })
  )

  it.effect("smooths with exponential decay and recovers when load falls", () =>
    Effect.gen(function* () {
      const shedder = yield* LoadShedder.make({ capacity: 10, smoothing: "2 seconds", bound: false })
      const gate = yield* Deferred.make<void>()
      const fibers = yield* hold(shedder, 10, gate)
      // A step from 0 to 10 in flight: utilization 1 − e^(−t/τ).
      yield* TestClock.adjust("1 second")
      expect(shedder.utilizationUnsafe()).toBeCloseTo(1 - Math.exp(-0.5), 9)
      expect(yield* admitted(shedder)).toEqual(Criticality.levels)
      yield* TestClock.adjust("9 seconds")
      const u0 = shedder.utilizationUnsafe()
      expect(u0).toBeCloseTo(1 - Math.exp(-5), 9) // 0.993: just below CRITICAL's 1.0
      expect(yield* admitted(shedder)).toEqual(["CRITICAL_PLUS", "CRITICAL"])
      // Load falls to 0: utilization decays as u0 · e^(−t/τ).
      for (const fiber of fibers) yield* Fiber.interrupt(fiber)
      expect(shedder.activeUnsafe()).toBe(0)
      yield* TestClock.adjust("100 millis")
      expect(shedder.utilizationUnsafe()).toBeCloseTo(u0 * Math.exp(-0.05), 9)
      expect(yield* admitted(shedder)).toEqual(["CRITICAL_PLUS", "CRITICAL"])
      // SHEDDABLE comes back once u0 · e^(−t/τ) < 0.8, i.e. after τ · ln(u0 / 0.8) ≈ 0.43 s.
      const back = 2000 * Math.log(u0 / 0.8)
      yield* TestClock.adjust(Duration.millis(back - 100 - 20))
      expect(yield* admitted(shedder)).toEqual(["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS"])
      yield* TestClock.adjust("40 millis")
      expect(yield* admitted(shedder)).toEqual(Criticality.levels)
    })
  )

  it.effect("interruption, failure and success all release the active count", () =>
    Effect.gen(function* () {
      const shedder = yield* LoadShedder.make({ capacity: 5, bound: false })
      const fiber = yield* Effect.forkChild(shedder.withShedder(Effect.never))
      yield* Effect.yieldNow
      expect(shedder.activeUnsafe()).toBe(1)
      yield* Fiber.interrupt(fiber)
      expect(shedder.activeUnsafe()).toBe(0)
      // Interrupted while sleeping under TestClock.
      const sleeper = yield* Effect.forkChild(shedder.withShedder(Effect.sleep("1 minute")))
      yield* Effect.yieldNow
      expect(shedder.activeUnsafe()).toBe(1)
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.interrupt(sleeper)
      expect(shedder.activeUnsafe()).toBe(0)
      expect(yield* Effect.exit(shedder.withShedder(Effect.fail("boom")))).toStrictEqual(Exit.fail("boom"))
      yield* Effect.exit(shedder.withShedder(Effect.die("bug")))
      expect(yield* shedder.withShedder(Effect.succeed(1))).toBe(1)
      expect(shedder.activeUnsafe()).toBe(0)
      // A timeout interrupts the guarded work: released too.
      const timedOut = yield* Effect.forkChild(
        shedder.withShedder(Effect.never).pipe(Effect.timeout("1 second"))
      )
      yield* TestClock.adjust("2 seconds")
      expect(Exit.isFailure(yield* Fiber.await(timedOut))).toBe(true)
      expect(shedder.activeUnsafe()).toBe(0)
    })
  )

  it.effect("combines an injected event-loop utilization source, sampled on the Clock", () =>
    Effect.gen(function* () {
      let elu = 0.85
      let samples = 0
      const source = Effect.sync(() => {
        samples++
        return elu
      })
      const shedder = yield* LoadShedder.make({
        capacity: 100,
        eventLoop: { interval: "500 millis", source }
      })
      expect(samples).toBe(0)
      expect(yield* admitted(shedder)).toEqual(Criticality.levels)
      yield* TestClock.adjust("500 millis")
      expect(samples).toBe(1)
      expect(shedder.eventLoopUtilizationUnsafe()).toBe(0.85)
      expect(yield* admitted(shedder)).toEqual(["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS"])
      elu = Number.NaN // a broken reading keeps the last good one
      yield* TestClock.adjust("500 millis")
      expect(shedder.eventLoopUtilizationUnsafe()).toBe(0.85)
      elu = 7 // clamped to 1
      yield* TestClock.adjust("500 millis")
      expect(shedder.eventLoopUtilizationUnsafe()).toBe(1)
      // Strictly by criticality: SHEDDABLE arrived within two sampling intervals, so the
      // event-loop signal sheds SHEDDABLE only, not the levels above it.
      expect(yield* admitted(shedder)).toEqual(["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS"])
      // Once only CRITICAL work arrives, the loop's load is CRITICAL's: it sheds CRITICAL
      // (1.0) but never CRITICAL_PLUS (1.1).
      yield* TestClock.adjust("1500 millis")
      const critical = (level: Level) =>
        Effect.map(
          Effect.exit(shedder.withShedder(Effect.void).pipe(Criticality.withCriticality(level))),
          Exit.isSuccess
        )
      expect(yield* critical("CRITICAL_PLUS")).toBe(true)
      expect(yield* critical("CRITICAL")).toBe(false)
      expect(shedder.wouldShedUnsafe("SHEDDABLE_PLUS")).toBe(true)
      // a SHEDDABLE_PLUS arrival (shed) lifts the signal off CRITICAL again, from the next
      // instant on: within one instant every decision sees the same cover
      expect(yield* critical("SHEDDABLE_PLUS")).toBe(false)
      expect(yield* critical("CRITICAL")).toBe(false)
      yield* TestClock.adjust("1 millis")
      expect(yield* critical("CRITICAL")).toBe(true)
      elu = 0.1
      yield* TestClock.adjust("5 seconds")
      expect(samples).toBe(16)
      expect(yield* admitted(shedder)).toEqual(Criticality.levels)
      // The default source reads Node's perf_hooks.
      const node = yield* LoadShedder.nodeEventLoopUtilization
      const value = yield* node
      expect(value).toBeGreaterThanOrEqual(0)
      expect(value).toBeLessThanOrEqual(1)
    })
  )

  it.effect("reports metrics: utilization gauge, shed and admitted counters by criticality", () =>
    Effect.gen(function* () {
      const shedder = yield* LoadShedder.make({ capacity: 2, name: "metrics-test", bound: false })
      const gate = yield* Deferred.make<void>()
      yield* hold(shedder, 2, gate)
      yield* TestClock.adjust("10 seconds")
      yield* admitted(shedder)
      yield* admitted(shedder)
      const tagged = <I, S>(m: Metric.Metric<I, S>, level?: Level) => {
        const byName = Metric.withAttributes(m, { shedder: "metrics-test" })
        return level === undefined ? byName : Metric.withAttributes(byName, { criticality: level })
      }
      expect((yield* Metric.value(tagged(LoadShedder.metrics.shed, "SHEDDABLE"))).count).toBe(2)
      expect((yield* Metric.value(tagged(LoadShedder.metrics.shed, "CRITICAL"))).count).toBe(0)
      expect((yield* Metric.value(tagged(LoadShedder.metrics.admitted, "CRITICAL_PLUS"))).count).toBe(4)
      expect((yield* Metric.value(tagged(LoadShedder.metrics.utilization))).value).toBeCloseTo(1, 4)
    })
  )

  it.effect("layer + withShedder, and bad options name the field", () =>
    Effect.gen(function* () {
      const ok = yield* LoadShedder.withShedder(Effect.succeed("x")).pipe(
        Effect.provide(LoadShedder.layer({ capacity: 1, thresholds: { CRITICAL_PLUS: Infinity } }))
      )
      expect(ok).toBe("x")
      const cases: ReadonlyArray<[LoadShedder.LoadShedderOptions, RegExp]> = [
        [{ capacity: 0 }, /capacity/],
        [{ capacity: -3 }, /capacity/],
        [{ capacity: Number.NaN }, /capacity/],
        [{} as any, /capacity/],
        [{ capacity: 1, smoothing: 0 }, /smoothing/],
        [{ capacity: 1, retryAfter: -1 }, /retryAfter/],
        [{ capacity: 1, thresholds: { CRITICAL: 0.7 } }, /thresholds\.CRITICAL \(0\.7\)/],
        [{ capacity: 1, thresholds: { SHEDDABLE: 0 } }, /SHEDDABLE/],
        [{ capacity: 1, thresholds: { CRITICAL_PLUS: 0.95 } }, /thresholds\.CRITICAL_PLUS/],
        [{ capacity: 1, eventLoop: { interval: 0 } }, /interval/],
        [{ capacity: 1, eventLoop: { source: 0.5 as any } }, /source/]
      ]
      for (const [options, field] of cases) {
        const exit = yield* Effect.exit(Effect.scoped(LoadShedder.make(options)))
        expect(Exit.isFailure(exit)).toBe(true)
        const error = Option.getOrUndefined(Exit.findErrorOption(exit))
        expect(error).toBeInstanceOf(Options.InvalidOptions)
        expect(error?.message).toMatch(field)
        expect(error?.message).toMatch(/LoadShedder/)
      }
    })
  )

  it.effect(
    "strictly by criticality: SHEDDABLE work in flight never gets CRITICAL within capacity shed",
    () =>
      Effect.gen(function* () {
        const shedder = yield* LoadShedder.make({ capacity: 10, smoothing: "100 millis", bound: false })
        const gate = yield* Deferred.make<void>()
        const fibers: Array<Fiber.Fiber<void, Errors.Overloaded>> = []
        const start = (level: Level) =>
          Effect.gen(function* () {
            const before = shedder.activeUnsafe()
            const fiber = yield* Effect.forkChild(
              shedder.withShedder(Deferred.await(gate)).pipe(Criticality.withCriticality(level))
            )
            yield* Effect.yieldNow
            if (shedder.activeUnsafe() === before + 1) fibers.push(fiber)
            return shedder.activeUnsafe() === before + 1
          })
        // 9 SHEDDABLE fill the shedder past SHEDDABLE's threshold (0.8)
        for (let i = 0; i < 9; i++) expect(yield* start("SHEDDABLE")).toBe(true)
        yield* TestClock.adjust("2 seconds")
        expect(yield* start("SHEDDABLE")).toBe(false)
        expect(shedder.utilizationUnsafe()).toBeCloseTo(0.9, 6)
        // CRITICAL is judged by CRITICAL work only: admitted while CRITICAL's own smoothed
        // work is below capacity (10 in flight smooth to just under 1.0, so an 11th still
        // enters), shed once it reaches it, though the total is far past 1.
        for (let i = 0; i < 11; i++) {
          expect(yield* start("CRITICAL")).toBe(true)
          yield* TestClock.adjust("2 seconds")
        }
        expect(shedder.activeOfUnsafe("CRITICAL")).toBe(11)
        expect(shedder.activeOfUnsafe("SHEDDABLE")).toBe(9)
        expect(shedder.levelUtilizationUnsafe("CRITICAL")).toBeCloseTo(1.1, 6)
        expect(shedder.utilizationUnsafe()).toBeCloseTo(2, 6)
        expect(yield* start("CRITICAL")).toBe(false)
        expect(yield* start("CRITICAL_PLUS")).toBe(true)
        yield* Deferred.succeed(gate, void 0)
        yield* Fiber.awaitAll(fibers)
        expect(shedder.activeUnsafe()).toBe(0)
        expect(Criticality.levels.map((l) => shedder.activeOfUnsafe(l))).toEqual([0, 0, 0, 0])
      })
  )
})

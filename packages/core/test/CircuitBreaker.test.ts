import { CircuitBreaker, Errors, Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Fiber, Layer, Metric, Option, Result, Schedule, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"

class Boom {
  readonly _tag = "Boom"
}
class NotFound {
  readonly _tag = "NotFound"
}

const ok = Effect.succeed("ok")
const boom = Effect.fail(new Boom())

const call = <A, E>(breaker: CircuitBreaker.Service, effect: Effect.Effect<A, E>) =>
  Effect.result(breaker.withBreaker(effect))

const isOpenError = (e: Result.Result<unknown, unknown>) =>
  Result.isFailure(e) && e.failure instanceof Errors.CircuitOpen

/** A failure made of interruptions only (the caller gave up). */
const isInterrupted = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)

let unique = 0
const uniqueName = (prefix: string) => `${prefix}-${++unique}`

describe("CircuitBreaker", () => {
  it.effect("trips on N consecutive failures; a success resets the count", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ name: "a", consecutiveFailures: 3, openFor: "10 seconds" })
      yield* call(breaker, boom)
      yield* call(breaker, boom)
      yield* call(breaker, ok)
      yield* call(breaker, boom)
      yield* call(breaker, boom)
      expect(yield* breaker.state).toBe("closed")
      yield* TestClock.adjust("1 second")
      const third = yield* call(breaker, boom)
      expect(Result.isFailure(third) && third.failure instanceof Boom).toBe(true)
      expect(yield* breaker.state).toBe("open")
      yield* TestClock.adjust("4 seconds")
      const rejected = yield* call(breaker, ok)
      expect(isOpenError(rejected)).toBe(true)
      if (Result.isFailure(rejected) && rejected.failure instanceof Errors.CircuitOpen) {
        expect(rejected.failure.name).toBe("a")
        expect(rejected.failure.halfOpenAt).toBe(11_000)
        expect(Duration.toMillis(rejected.failure.retryAfter)).toBe(6_000)
      }
      yield* TestClock.adjust("6 seconds")
      expect(yield* breaker.state).toBe("half-open")
    })
  )

  it.effect("defaults: 5 consecutive failures, open for 5 seconds, one probe", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ name: "defaults" })
      for (let i = 0; i < 4; i++) yield* call(breaker, boom)
      expect(yield* breaker.state).toBe("closed")
      yield* call(breaker, boom)
      expect(yield* breaker.state).toBe("open")
      yield* TestClock.adjust("4999 millis")
      expect(yield* breaker.state).toBe("open")
      yield* TestClock.adjust("1 millis")
      expect(yield* breaker.state).toBe("half-open")
      yield* call(breaker, ok)
      expect(yield* breaker.state).toBe("closed")
    })
  )

  it.effect("trips on a failure ratio over the window once the minimum volume is reached", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({
        name: "ratio",
        failureRatio: { ratio: 0.5, window: "10 seconds", minimumCalls: 10 }
      })
      // Only the ratio trips: 6 failures in a row below the minimum volume do not.
      for (let i = 0; i < 6; i++) yield* call(breaker, boom)
      expect(yield* breaker.state).toBe("closed")
      for (let i = 0; i < 3; i++) yield* call(breaker, ok)
      expect(yield* breaker.state).toBe("closed") // 6/9: below minimum volume
      yield* call(breaker, ok) // 6/10 >= 0.5
      expect(yield* breaker.state).toBe("closed") // a success never trips
      yield* call(breaker, boom) // 7/11
      expect(yield* breaker.state).toBe("open")
    })
  )

  it.effect(
    "trips at exactly the configured share (55 of 100 at 0.55, 7/100, 7/50, 7/25), not one failure before",
    () =>
      Effect.gen(function* () {
        for (const [failures, calls, ratio] of [
          [55, 100, 0.55],
          [7, 100, 0.07],
          [7, 50, 0.14],
          [7, 25, 0.28],
          [1, 3, 1 / 3],
          [29, 100, 0.29]
        ] as const) {
          const breaker = yield* CircuitBreaker.make({
            name: `exact-${ratio}`,
            failureRatio: { ratio, window: "1 minute", minimumCalls: calls }
          })
          // successes first, then failures: the last failure completes the share
          for (let i = 0; i < calls - failures; i++) yield* call(breaker, ok)
          for (let i = 0; i < failures - 1; i++) yield* call(breaker, boom)
          expect(yield* breaker.state).toBe("closed")
          yield* call(breaker, boom)
          expect([failures, calls, ratio, yield* breaker.state]).toEqual([failures, calls, ratio, "open"])
        }
      })
  )

  it.effect("the failure-ratio window forgets old outcomes", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({
        name: "ratio-window",
        failureRatio: { ratio: 0.5, window: "10 seconds", minimumCalls: 4 }
      })
      for (let i = 0; i < 3; i++) yield* call(breaker, boom)
      yield* TestClock.adjust("20 seconds")
      yield* call(breaker, ok)
      yield* call(breaker, ok)
      yield* call(breaker, ok)
      yield* call(breaker, boom) // 1/4 in the window
      expect(yield* breaker.state).toBe("closed")
      yield* call(breaker, boom) // 2/5
      expect(yield* breaker.state).toBe("closed")
      yield* call(breaker, boom) // 3/6
      expect(yield* breaker.state).toBe("open")
    })
  )

  it.effect("half-open closes only after K probes succeed and rejects extra calls", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({
        name: "probes",
        consecutiveFailures: 1,
        openFor: "1 second",
        halfOpenProbes: 2
      })
      yield* call(breaker, boom)
      yield* TestClock.adjust("1 second")
      const slow = Effect.as(Effect.sleep("100 millis"), "slow")
      const p1 = yield* Effect.forkChild(call(breaker, slow))
      const p2 = yield* Effect.forkChild(call(breaker, slow))
      yield* Effect.yieldNow
      const third = yield* call(breaker, ok)
      expect(isOpenError(third)).toBe(true)
      if (Result.isFailure(third) && third.failure instanceof Errors.CircuitOpen) {
        expect(Duration.toMillis(third.failure.retryAfter)).toBe(0)
      }
      expect(yield* breaker.state).toBe("half-open")
      yield* TestClock.adjust("100 millis")
      expect(yield* Fiber.join(p1)).toEqual(Result.succeed("slow"))
      expect(yield* Fiber.join(p2)).toEqual(Result.succeed("slow"))
      expect(yield* breaker.state).toBe("closed")
    })
  )

  it.effect("one successful probe is not enough when K = 2; a probe failure re-opens", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({
        name: "probes-2",
        consecutiveFailures: 1,
        openFor: "1 second",
        halfOpenProbes: 2
      })
      yield* call(breaker, boom)
      yield* TestClock.adjust("1 second")
      yield* call(breaker, ok)
      expect(yield* breaker.state).toBe("half-open")
      yield* call(breaker, boom)
      expect(yield* breaker.state).toBe("open")
      yield* TestClock.adjust("1 second")
      yield* call(breaker, ok)
      yield* call(breaker, ok)
      expect(yield* breaker.state).toBe("closed")
    })
  )

  it.effect("a Schedule gives the open durations of repeated trips, reset once closed", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({
        name: "schedule",
        consecutiveFailures: 1,
        openFor: Schedule.exponential("1 second")
      })
      const openFor = Effect.gen(function* () {
        const result = yield* call(breaker, ok)
        if (Result.isFailure(result) && result.failure instanceof Errors.CircuitOpen) {
          return Duration.toMillis(result.failure.retryAfter)
        }
        return -1
      })
      yield* call(breaker, boom)
      expect(yield* openFor).toBe(1_000)
      yield* TestClock.adjust("1 second")
      yield* call(breaker, boom) // failed probe
      expect(yield* openFor).toBe(2_000)
      yield* TestClock.adjust("2 seconds")
      yield* call(breaker, boom)
      expect(yield* openFor).toBe(4_000)
      yield* TestClock.adjust("4 seconds")
      yield* call(breaker, ok) // probe succeeds: closed, schedule restarts
      expect(yield* breaker.state).toBe("closed")
      yield* call(breaker, boom)
      expect(yield* openFor).toBe(1_000)
    })
  )

  it.effect("when the open-duration Schedule ends, the last duration is reused", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({
        name: "schedule-end",
        consecutiveFailures: 1,
        openFor: Schedule.max([Schedule.exponential("100 millis"), Schedule.recurs(2)])
      })
      const retryAfter = Effect.map(call(breaker, ok), (result) =>
        Result.isFailure(result) && result.failure instanceof Errors.CircuitOpen
          ? Duration.toMillis(result.failure.retryAfter)
          : -1
      )
      const seen: Array<number> = []
      yield* call(breaker, boom)
      for (let trip = 0; trip < 4; trip++) {
        const millis = yield* retryAfter
        seen.push(millis)
        yield* TestClock.adjust(millis)
        yield* call(breaker, boom) // the probe fails
      }
      expect(seen).toEqual([100, 200, 200, 200])
    })
  )

  it.effect("isolate forces it open until reset", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ name: "isolate" })
      yield* breaker.isolate
      expect(yield* breaker.state).toBe("open")
      yield* TestClock.adjust("1 hour")
      expect(yield* breaker.state).toBe("open")
      const rejected = yield* call(breaker, ok)
      expect(isOpenError(rejected)).toBe(true)
      if (Result.isFailure(rejected) && rejected.failure instanceof Errors.CircuitOpen) {
        expect(rejected.failure.halfOpenAt).toBe(Infinity)
        expect(Duration.isFinite(rejected.failure.retryAfter)).toBe(false)
      }
      yield* breaker.reset
      expect(yield* breaker.state).toBe("closed")
      expect(yield* call(breaker, ok)).toEqual(Result.succeed("ok"))
    })
  )

  it.effect("reset forgets consecutive failures", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ name: "reset", consecutiveFailures: 2 })
      yield* call(breaker, boom)
      yield* breaker.reset
      yield* call(breaker, boom)
      expect(yield* breaker.state).toBe("closed")
      yield* call(breaker, boom)
      expect(yield* breaker.state).toBe("open")
      yield* breaker.reset
      expect(yield* breaker.state).toBe("closed")
    })
  )

  it.effect("isFailure picks which failures count; ignored failures count as successes; defects count", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({
        name: "predicate",
        consecutiveFailures: 2,
        isFailure: (e) => !(e instanceof NotFound)
      })
      const notFound = Effect.fail(new NotFound())
      for (let i = 0; i < 5; i++) yield* call(breaker, notFound)
      expect(yield* breaker.state).toBe("closed")
      yield* call(breaker, boom)
      yield* call(breaker, notFound) // resets the run
      yield* call(breaker, boom)
      expect(yield* breaker.state).toBe("closed")
      yield* Effect.exit(breaker.withBreaker(Effect.die("kaput")))
      expect(yield* breaker.state).toBe("open")
    })
  )

  it.effect("interruption never counts as a failure", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ name: "interrupt", consecutiveFailures: 1 })
      for (let i = 0; i < 3; i++) {
        const fiber = yield* Effect.forkChild(breaker.withBreaker(Effect.never))
        yield* Effect.yieldNow
        yield* Fiber.interrupt(fiber)
      }
      const exit = yield* Effect.exit(breaker.withBreaker(Effect.interrupt))
      expect(isInterrupted(exit)).toBe(true)
      expect(yield* breaker.state).toBe("closed")
    })
  )

  it.effect("an interrupted probe frees its slot", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({
        name: "probe-interrupt",
        consecutiveFailures: 1,
        openFor: 1_000
      })
      yield* call(breaker, boom)
      yield* TestClock.adjust("1 second")
      const probe = yield* Effect.forkChild(breaker.withBreaker(Effect.never))
      yield* Effect.yieldNow
      expect(isOpenError(yield* call(breaker, ok))).toBe(true)
      yield* Fiber.interrupt(probe)
      expect(yield* breaker.state).toBe("half-open")
      expect(yield* call(breaker, ok)).toEqual(Result.succeed("ok"))
      expect(yield* breaker.state).toBe("closed")
    })
  )

  it.effect("outcomes of calls admitted before a state change are ignored", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ name: "stale", consecutiveFailures: 1, openFor: 1_000 })
      const slowSuccess = yield* Effect.forkChild(call(breaker, Effect.as(Effect.sleep("5 seconds"), "late")))
      yield* Effect.yieldNow
      yield* call(breaker, boom)
      expect(yield* breaker.state).toBe("open")
      yield* TestClock.adjust("1 second")
      expect(yield* breaker.state).toBe("half-open")
      yield* TestClock.adjust("4 seconds")
      expect(yield* Fiber.join(slowSuccess)).toEqual(Result.succeed("late"))
      // The late success belonged to the closed state: it did not close the breaker.
      expect(yield* breaker.state).toBe("half-open")
    })
  )

  it.effect("reports transitions as metrics and on stateChanges / onStateChange", () =>
    Effect.gen(function* () {
      const name = uniqueName("metrics")
      const seen: Array<string> = []
      const breaker = yield* CircuitBreaker.make({
        name,
        consecutiveFailures: 1,
        openFor: 1_000,
        onStateChange: (c) => seen.push(`${c.from}->${c.to}@${c.at}`)
      })
      const changes = yield* Effect.forkChild(Stream.runCollect(Stream.take(breaker.stateChanges, 3)))
      // Let the stream subscribe before the first transition.
      yield* Effect.repeat(Effect.yieldNow, { times: 10 })
      yield* call(breaker, boom)
      yield* call(breaker, ok) // rejected
      yield* call(breaker, ok) // rejected
      yield* TestClock.adjust("1 second")
      yield* call(breaker, ok) // probe succeeds
      expect(seen).toEqual(["closed->open@0", "open->half-open@1000", "half-open->closed@1000"])
      const collected = yield* Fiber.join(changes)
      expect(collected.map((c) => `${c.from}->${c.to}`)).toEqual([
        "closed->open",
        "open->half-open",
        "half-open->closed"
      ])

      const snapshot = yield* Metric.snapshot
      const find = (metric: string, tags: Record<string, string>) =>
        snapshot.filter(
          (pair) =>
            pair.id === metric &&
            pair.attributes?.["name"] === name &&
            Object.entries(tags).every(([k, v]) => pair.attributes?.[k] === v)
        )
      const [gauge] = find("sluice_circuit_breaker_state", {})
      expect((gauge!.state as Metric.GaugeState<number>).value).toBe(0)
      const [rejected] = find("sluice_circuit_breaker_rejected", {})
      expect((rejected!.state as Metric.CounterState<number>).count).toBe(2)
      const [opened] = find("sluice_circuit_breaker_transitions", { from: "closed", to: "open" })
      expect((opened!.state as Metric.CounterState<number>).count).toBe(1)
      const [closed] = find("sluice_circuit_breaker_transitions", { from: "half-open", to: "closed" })
      expect((closed!.state as Metric.CounterState<number>).count).toBe(1)
    })
  )

  it.effect("combinator is data-first and data-last; layer provides the tag", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ name: "dual", consecutiveFailures: 1 })
      expect(yield* CircuitBreaker.withBreaker(ok, breaker)).toBe("ok")
      expect(yield* ok.pipe(CircuitBreaker.withBreaker(breaker))).toBe("ok")
      expect(CircuitBreaker.isCircuitBreaker(breaker)).toBe(true)

      const fromDefault = yield* Effect.map(CircuitBreaker.CircuitBreaker, (b) => b.name).pipe(
        Effect.provide(CircuitBreaker.layer({ name: "default" }))
      )
      expect(fromDefault).toBe("default")
      class RedisBreaker extends CircuitBreaker.Tag("redis")<RedisBreaker>() {}
      const fromCustom = yield* Effect.map(RedisBreaker, (b) => b.name).pipe(
        Effect.provide(CircuitBreaker.layer({ name: "redis" }, RedisBreaker))
      )
      expect(fromCustom).toBe("redis")
      const bad = yield* Effect.exit(
        Layer.build(CircuitBreaker.layer({ name: "x", halfOpenProbes: 0 })).pipe(Effect.scoped)
      )
      expect(Exit.isFailure(bad)).toBe(true)
    })
  )

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const cases: Array<[CircuitBreaker.CircuitBreakerOptions, RegExp]> = [
        [{ name: "" }, /[\n.]name: /],
        [{ name: "x", consecutiveFailures: 0 }, /[\n.]consecutiveFailures: /],
        [{ name: "x", consecutiveFailures: 1.5 }, /[\n.]consecutiveFailures: /],
        [{ name: "x", consecutiveFailures: Number.NaN }, /[\n.]consecutiveFailures: /],
        [{ name: "x", halfOpenProbes: 0 }, /[\n.]halfOpenProbes: /],
        [{ name: "x", openFor: -1 }, /[\n.]openFor: /],
        [{ name: "x", openFor: 0 }, /[\n.]openFor: /],
        [{ name: "x", openFor: Number.NaN }, /[\n.]openFor: /],
        [{ name: "x", failureRatio: { ratio: 0, window: "1 second", minimumCalls: 1 } }, /[\n.]ratio: /],
        [{ name: "x", failureRatio: { ratio: 1.5, window: "1 second", minimumCalls: 1 } }, /[\n.]ratio: /],
        [{ name: "x", failureRatio: { ratio: 0.5, window: 0, minimumCalls: 1 } }, /[\n.]window: /],
        [
          { name: "x", failureRatio: { ratio: 0.5, window: "1 second", minimumCalls: 0 } },
          /[\n.]minimumCalls: /
        ],
        [{ name: "x", isFailure: 3 as any }, /[\n.]isFailure: /]
      ]
      for (const [options, field] of cases) {
        const exit = yield* Effect.exit(CircuitBreaker.make(options))
        expect(Exit.isFailure(exit)).toBe(true)
        if (Exit.isFailure(exit)) {
          const error = Cause.findErrorOption(exit.cause)
          expect(Option.isSome(error)).toBe(true)
          if (Option.isSome(error)) {
            expect(error.value).toBeInstanceOf(Options.InvalidOptions)
            expect(error.value.message).toMatch(field)
          }
        }
      }
    })
  )

  type Outcome = "success" | "failure" | "die"
  interface Op {
    readonly start: number
    readonly duration: number
    readonly outcome: Outcome
    readonly interruptAfter: number | null
  }

  it("never lets more than K probes through per half-open period, under random interleavings", async () => {
    const opArb: fc.Arbitrary<Op> = fc.record({
      // A 100 ms grid keeps the number of distinct wake-up times (and TestClock rounds) small.
      start: fc.integer({ min: 0, max: 30 }).map((n) => n * 100),
      duration: fc.integer({ min: 0, max: 4 }).map((n) => n * 100),
      outcome: fc.constantFrom<Outcome>("success", "success", "failure", "die"),
      interruptAfter: fc.option(
        fc.integer({ min: 0, max: 4 }).map((n) => n * 100),
        { nil: null }
      )
    })
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 5 }).map((n) => n * 100),
        fc.array(opArb, { minLength: 1, maxLength: 50 }),
        async (probes, failures, openMillis, ops) => {
          let episode = 0
          let halfOpen = false
          const live = new Map<number, number>()
          const admitted = new Map<number, number>()
          const interrupted = new Map<number, number>()
          let violation: string | undefined
          const program = Effect.gen(function* () {
            const breaker = yield* CircuitBreaker.make({
              name: "prop",
              consecutiveFailures: failures,
              openFor: openMillis,
              halfOpenProbes: probes,
              onStateChange: (c) => {
                halfOpen = c.to === "half-open"
                if (halfOpen) episode++
              }
            })
            const body = (op: Op) =>
              Effect.suspend(() => {
                if (!halfOpen) return Effect.sleep(op.duration)
                const mine = episode
                live.set(mine, (live.get(mine) ?? 0) + 1)
                admitted.set(mine, (admitted.get(mine) ?? 0) + 1)
                if (live.get(mine)! > probes) violation = `${live.get(mine)} probes in flight, K = ${probes}`
                const net = admitted.get(mine)! - (interrupted.get(mine) ?? 0)
                if (net > probes) violation = `${net} probes admitted in one period, K = ${probes}`
                return Effect.sleep(op.duration).pipe(
                  Effect.onExit((exit) =>
                    Effect.sync(() => {
                      live.set(mine, live.get(mine)! - 1)
                      if (isInterrupted(exit)) interrupted.set(mine, (interrupted.get(mine) ?? 0) + 1)
                    })
                  )
                )
              }).pipe(
                Effect.andThen(
                  op.outcome === "success"
                    ? Effect.void
                    : op.outcome === "failure"
                      ? Effect.fail(new Boom())
                      : Effect.die("defect")
                )
              )
            const fibers = yield* Effect.forEach(ops, (op) =>
              Effect.gen(function* () {
                const fiber = yield* Effect.forkChild(
                  Effect.sleep(op.start).pipe(Effect.andThen(Effect.exit(breaker.withBreaker(body(op)))))
                )
                if (op.interruptAfter !== null) {
                  yield* Effect.forkChild(
                    Effect.sleep(op.start + op.interruptAfter).pipe(Effect.andThen(Fiber.interrupt(fiber)))
                  )
                }
                return fiber
              })
            )
            yield* TestClock.adjust(4_000)
            yield* Effect.forEach(fibers, Fiber.await)
            // No slot may be leaked: once the open period is over, a call goes through.
            yield* TestClock.adjust(openMillis * 2)
            const final = yield* Effect.exit(breaker.withBreaker(Effect.succeed("after")))
            return final
          })
          const final = await Effect.runPromise(program.pipe(Effect.provide(TestClock.layer())))
          if (violation !== undefined) throw new Error(violation)
          return Exit.isSuccess(final)
        }
      ),
      { numRuns: 50 }
    )
  })
})

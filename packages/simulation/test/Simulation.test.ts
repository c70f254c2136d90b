import { Errors, Options } from "@sluice/core"
import { Simulation } from "@sluice/simulation"
import { describe, expect, it } from "@effect/vitest"
import {
  Cause,
  Clock,
  Context,
  Deferred,
  Duration,
  Effect,
  Exit,
  Fiber,
  Option,
  Random,
  Result,
  Schedule
} from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"

const successValue = <A, E>(exit: Exit.Exit<A, E>): A => {
  if (Exit.isSuccess(exit)) return exit.value
  throw new Error(`expected success, got ${Cause.pretty(exit.cause)}`)
}

describe("Simulation.run (engine)", () => {
  it.effect("jumps from event to event: an hour of sleeps costs no real time", () =>
    Effect.gen(function* () {
      const program = Effect.gen(function* () {
        const before = yield* Clock.currentTimeMillis
        yield* Effect.sleep("1 hour")
        return [before, yield* Clock.currentTimeMillis] as const
      })
      const result = yield* Simulation.run(program, { startMillis: 1_000 })
      expect(successValue(result.exit)).toEqual([1_000, 3_601_000])
      expect(result.elapsedMillis).toBe(3_600_000)
      expect(result.timedOut).toBe(false)
      expect(result.events).toBe(1)
    })
  )

  it.effect("wakes sleepers in time order, equal times in the order they slept", () =>
    Effect.gen(function* () {
      const order: Array<string> = []
      const sleeper = (name: string, millis: number) =>
        Effect.andThen(
          Effect.sleep(millis),
          Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => order.push(`${name}@${now}`)))
        )
      const result = yield* Simulation.run(
        Effect.all([sleeper("c", 300), sleeper("a", 100), sleeper("b1", 200), sleeper("b2", 200)], {
          concurrency: "unbounded"
        })
      )
      expect(Exit.isSuccess(result.exit)).toBe(true)
      expect(order).toEqual(["a@100", "b1@200", "b2@200", "c@300"])
      expect(result.elapsedMillis).toBe(300)
    })
  )

  it.effect("drives Schedules, timeouts and forked fibers in virtual time", () =>
    Effect.gen(function* () {
      const program = Effect.gen(function* () {
        let tries = 0
        const retried = yield* Effect.suspend(() =>
          ++tries < 4 ? Effect.fail("nope") : Effect.succeed(tries)
        ).pipe(Effect.retry(Schedule.exponential("100 millis")))
        const afterRetry = yield* Clock.currentTimeMillis // 100 + 200 + 400
        const timedOut = yield* Effect.result(Effect.timeout(Effect.sleep("10 seconds"), "1 second"))
        const afterTimeout = yield* Clock.currentTimeMillis
        const fiber = yield* Effect.forkChild(Effect.as(Effect.sleep("5 seconds"), "forked"))
        const joined = yield* Fiber.join(fiber)
        return { retried, afterRetry, timedOut: Result.isFailure(timedOut), afterTimeout, joined }
      })
      const result = yield* Simulation.run(program)
      expect(successValue(result.exit)).toEqual({
        retried: 4,
        afterRetry: 700,
        timedOut: true,
        afterTimeout: 1_700,
        joined: "forked"
      })
      expect(result.elapsedMillis).toBe(6_700)
    })
  )

  it.effect("makes Random reproducible from a seed", () =>
    Effect.gen(function* () {
      const draw = Effect.all(Array.from({ length: 5 }, () => Random.nextIntBetween(0, 1_000_000)))
      const a = successValue((yield* Simulation.run(draw, { seed: 7 })).exit)
      const b = successValue((yield* Simulation.run(draw, { seed: 7 })).exit)
      const c = successValue((yield* Simulation.run(draw, { seed: 8 })).exit)
      expect(a).toEqual(b)
      expect(a).not.toEqual(c)
    })
  )

  it.effect("records counters per bucket and samples gauges at bucket boundaries", () =>
    Effect.gen(function* () {
      const program = Effect.gen(function* () {
        const recorder = yield* Simulation.Recorder
        const ticks = recorder.counterUnsafe("ticks")
        let level = 0
        recorder.gaugeUnsafe("level", () => level)
        // one tick at 0, 250, 500, ... 1750 ms; the level rises at each tick
        for (let i = 0; i < 8; i++) {
          ticks()
          level++
          yield* Effect.sleep("250 millis")
        }
      })
      const { elapsedMillis, timeSeries } = yield* Simulation.run(program, { resolution: "500 millis" })
      expect(elapsedMillis).toBe(2_000)
      expect(timeSeries.resolutionMillis).toBe(500)
      expect(timeSeries.times).toEqual([0, 500, 1_000, 1_500, 2_000])
      expect(timeSeries.counters.ticks).toEqual([2, 2, 2, 2, 0])
      // sampled after every event at or before the boundary: level at t=500 is 3 (ticks at 0, 250, 500)
      expect(timeSeries.gauges.level).toEqual([1, 3, 5, 7, 8])
    })
  )

  it.effect("interrupts a program that runs past maxDuration", () =>
    Effect.gen(function* () {
      const result = yield* Simulation.run(Effect.forever(Effect.sleep("1 second")), {
        maxDuration: "1 minute"
      })
      expect(result.timedOut).toBe(true)
      expect(Exit.hasInterrupts(result.exit)).toBe(true)
      expect(result.elapsedMillis).toBe(60_000)
    })
  )

  it.effect("returns the program's failure in the exit", () =>
    Effect.gen(function* () {
      const result = yield* Simulation.run(Effect.andThen(Effect.sleep("1 second"), Effect.fail("boom")))
      expect(result.exit).toEqual(Exit.fail("boom"))
      expect(result.elapsedMillis).toBe(1_000)
    })
  )

  it.effect("sees the enclosing context and waits for fibers outside the simulation", () =>
    Effect.gen(function* () {
      class Greeting extends Context.Service<Greeting, string>()("test/Greeting") {}
      const gate = yield* Deferred.make<number>()
      const program = Effect.gen(function* () {
        yield* Effect.sleep("2 seconds")
        const value = yield* Deferred.await(gate) // completed by a fiber of the outer runtime
        return `${yield* Greeting} ${value}`
      })
      const running = yield* Effect.forkChild(
        Simulation.run(program).pipe(Effect.provideService(Greeting, "hello"))
      )
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, 42)
      const result = yield* Fiber.join(running)
      expect(successValue(result.exit)).toBe("hello 42")
      expect(result.elapsedMillis).toBe(2_000)
    })
  )

  it.effect("is unaffected by the TestClock of the enclosing test", () =>
    Effect.gen(function* () {
      yield* TestClock.adjust("1 hour")
      const result = yield* Simulation.run(Effect.andThen(Effect.sleep("3 seconds"), Clock.currentTimeMillis))
      expect(successValue(result.exit)).toBe(3_000)
    })
  )

  it.effect("rejects a non-positive resolution", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(Simulation.run(Effect.void, { resolution: 0 }))
      expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
    })
  )
})

describe("Simulation.makeSlotServer", () => {
  const callAll = (server: Simulation.SlotServer, n: number) =>
    Effect.all(
      Array.from({ length: n }, () =>
        Effect.flatMap(Effect.result(server.call(0)), (result) =>
          Effect.map(Clock.currentTimeMillis, (now) => ({ ok: Result.isSuccess(result), at: now }))
        )
      ),
      { concurrency: "unbounded" }
    )

  it.effect("accepts up to maxBusy, and a rejection holds a slot before the client sees it", () =>
    Effect.gen(function* () {
      const program = Effect.gen(function* () {
        const server = yield* Simulation.makeSlotServer({ maxBusy: 2 })
        const busyAt: Array<number> = []
        const sample = Effect.andThen(
          Effect.sleep("120 millis"),
          Effect.sync(() => busyAt.push(server.busyUnsafe()))
        )
        const [results] = yield* Effect.all([callAll(server, 3), sample], { concurrency: "unbounded" })
        return { results, busyAt, stats: server.statsUnsafe(), busyAfter: server.busyUnsafe() }
      })
      const result = yield* Simulation.run(program)
      const { busyAfter, busyAt, results, stats } = successValue(result.exit)
      expect(results).toEqual([
        { ok: true, at: 600 },
        { ok: true, at: 600 },
        { ok: false, at: 150 }
      ])
      expect(busyAt).toEqual([3]) // two accepted + one rejection in progress
      expect(stats).toEqual({ accepted: 2, rejected: 1 })
      expect(busyAfter).toBe(0)
    })
  )

  it.effect("fails with Errors.Overloaded and follows capacity changes", () =>
    Effect.gen(function* () {
      const program = Effect.gen(function* () {
        const server = yield* Simulation.makeSlotServer({
          maxBusy: 1,
          capacityChanges: [
            { at: "1 second", maxBusy: 0 },
            { at: "2 seconds", maxBusy: 1 }
          ]
        })
        const first = yield* Effect.result(server.call(0)) // arrives at 100, done at 600
        yield* Effect.sleep("500 millis") // 1100: capacity 0
        const capacityAt1100 = server.maxBusyUnsafe()
        const second = yield* Effect.result(server.call(0)) // arrives at 1200: rejected
        yield* Effect.sleep("1 second") // 2250
        const third = yield* Effect.result(server.call(0)) // arrives at 2350: accepted
        return { first, capacityAt1100, second, third }
      })
      const { capacityAt1100, first, second, third } = successValue((yield* Simulation.run(program)).exit)
      expect(Result.isSuccess(first)).toBe(true)
      expect(capacityAt1100).toBe(0)
      expect(Result.isFailure(second) && second.failure).toBeInstanceOf(Errors.Overloaded)
      expect(Result.isSuccess(third)).toBe(true)
    })
  )

  it.effect("behaves the same under TestClock (the Effect.sleep path)", () =>
    Effect.gen(function* () {
      const server = yield* Simulation.makeSlotServer({ maxBusy: 2 })
      const fiber = yield* Effect.forkChild(callAll(server, 3))
      yield* TestClock.adjust("120 millis")
      expect(server.busyUnsafe()).toBe(3)
      yield* TestClock.adjust("1 second")
      // TestClock may wake equal-time sleepers in another order: compare as a multiset
      const results = yield* Fiber.join(fiber)
      expect([...results].sort((a, b) => a.at - b.at)).toEqual([
        { ok: false, at: 150 },
        { ok: true, at: 600 },
        { ok: true, at: 600 }
      ])
      expect(server.statsUnsafe()).toEqual({ accepted: 2, rejected: 1 })
    })
  )

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      for (const [bad, field] of [
        [{ maxBusy: 0 }, /maxBusy/],
        [{ maxBusy: 5, serviceTime: 0 }, /serviceTime/],
        [{ maxBusy: 5, capacityChanges: [{ at: "1 second", maxBusy: -1 }] }, /maxBusy/]
      ] as const) {
        const exit = yield* Effect.exit(Simulation.makeSlotServer(bad))
        expect(Exit.isFailure(exit)).toBe(true)
        const error = Exit.findErrorOption(exit)
        if (Option.isSome(error)) {
          expect(error.value).toBeInstanceOf(Options.InvalidOptions)
          expect(error.value.message).toMatch(field)
        }
      }
    })
  )
})

describe("Simulation workloads", () => {
  it.effect("computes the optimal completion time", () =>
    Effect.gen(function* () {
      // 4 operations 1 ms apart, 2 slots: starts at 100, 101, then 600, 601 when slots free
      const tiny: Simulation.Scenario = {
        name: "tiny",
        operationsPerClient: 4,
        arrivalsPerSecond: 1000,
        server: { maxBusy: 2 }
      }
      expect(yield* Simulation.optimalCompletionMillis(tiny)).toBe(1_101)
      // overload-2000: 40 batches of 50; the last starts at 100 + 39 × 500 + 49 and ends 500 ms later
      expect(yield* Simulation.optimalCompletionMillis(Simulation.overload2000)).toBe(20_149)
      // capacity-drop: 991 operations done by 10 s... the greedy schedule ends at 52.149 s
      const drop = yield* Simulation.optimalCompletionMillis(Simulation.capacityDrop)
      expect(drop).toBe(52_149)
      // a capacity of 0 that never returns: never done
      const stuck: Simulation.Scenario = {
        ...tiny,
        server: { maxBusy: 1, capacityChanges: [{ at: 0, maxBusy: 0 }] }
      }
      expect(yield* Simulation.optimalCompletionMillis(stuck)).toBe(Number.POSITIVE_INFINITY)
    })
  )

  it("computes Jain's fairness index", () => {
    expect(Simulation.jainFairness([10, 10, 10])).toBe(1)
    expect(Simulation.jainFairness([30, 0, 0])).toBeCloseTo(1 / 3, 10)
    expect(Simulation.jainFairness([])).toBe(1)
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 50 }),
        (xs) => {
          const j = Simulation.jainFairness(xs)
          return j >= 1 / xs.length - 1e-9 && j <= 1 + 1e-9
        }
      )
    )
  })

  const retryingClient = (attempts: number) => () =>
    Effect.succeed<Simulation.Client>({
      run: (attempt) => Effect.retry(attempt, Schedule.recurs(attempts - 1))
    })

  it.effect("runs a workload and keeps its books consistent", () =>
    Effect.gen(function* () {
      const workload: Simulation.Scenario = {
        name: "small",
        clients: 2,
        operationsPerClient: 100,
        arrivalsPerSecond: 200,
        server: { maxBusy: 20 }
      }
      const report = yield* Simulation.runScenario(workload, retryingClient(3), { seed: 3 })
      const series = report.timeSeries
      const sum = (xs: ReadonlyArray<number> | undefined) => (xs ?? []).reduce((a, b) => a + b, 0)
      expect(report.operations).toBe(200)
      expect(report.succeeded + report.failedOperations).toBe(200)
      expect(report.server.accepted).toBe(report.attempts - report.failedAttempts)
      expect(report.server.rejected).toBe(report.failedAttempts)
      expect(report.succeeded).toBe(report.server.accepted)
      expect(sum(series.counters.attempts)).toBe(report.attempts)
      expect(sum(series.counters.rejections)).toBe(report.failedAttempts)
      expect(sum(series.counters.completed)).toBe(report.succeeded)
      expect(report.clients.map((c) => c.operations)).toEqual([100, 100])
      expect(Math.max(...(series.gauges.busy ?? []))).toBeGreaterThan(20) // rejections hold slots too
      expect(report.failedOperations).toBeGreaterThan(0) // 3 attempts are not enough at 2x capacity
      expect(report.fairness).toBeGreaterThan(0.5)
      expect(series.gauges.inFlight).toHaveLength(series.times.length)
      // same seed, same run
      const again = yield* Simulation.runScenario(workload, retryingClient(3), { seed: 3 })
      expect(again.timeSeries).toEqual(report.timeSeries)
    })
  )

  it.effect("shows a retry storm collapsing overload-2000", () =>
    Effect.gen(function* () {
      const report = yield* Simulation.runScenario(Simulation.overload2000, retryingClient(5), { seed: 1 })
      // After the first 50, the rejections of 2000 retrying clients keep every slot busy.
      expect(report.succeeded).toBe(50)
      expect(report.failedOperations).toBe(1950)
      expect(report.attempts).toBe(50 + 1950 * 5)
      expect(report.completionMillis).toBeLessThan(report.optimalMillis) // it gave up, fast
    })
  )

  it.effect("lets clients register gauges, suffixed per client", () =>
    Effect.gen(function* () {
      const workload: Simulation.Scenario = { ...Simulation.manyClients, operationsPerClient: 5 }
      const report = yield* Simulation.runScenario(workload, (index) =>
        Effect.succeed<Simulation.Client>({ run: (attempt) => attempt, gauges: { id: () => index } })
      )
      expect(report.timeSeries.gauges["id.3"]?.[0]).toBe(3)
      expect(report.clients).toHaveLength(10)
      expect(report.succeeded).toBe(50)
    })
  )

  it.effect("reports a workload cut short by maxDuration", () =>
    Effect.gen(function* () {
      const stuck: Simulation.Scenario = {
        name: "stuck",
        operationsPerClient: 3,
        arrivalsPerSecond: 10,
        server: { maxBusy: 1, capacityChanges: [{ at: 0, maxBusy: 0 }] }
      }
      const forever = () =>
        Effect.succeed<Simulation.Client>({
          run: (attempt) => Effect.retry(attempt, Schedule.spaced("1 second"))
        })
      const report = yield* Simulation.runScenario(stuck, forever, { maxDuration: Duration.minutes(1) })
      expect(report.timedOut).toBe(true)
      expect(report.succeeded).toBe(0)
      expect(report.completionMillis).toBe(60_000)
    })
  )
})

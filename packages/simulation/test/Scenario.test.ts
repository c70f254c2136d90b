import { Errors, Options } from "@sluice/core"
import { Simulation } from "@sluice/simulation"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Clock, Effect, Exit, Option, Result, Schedule, Schema } from "effect"

const successValue = <A, E>(exit: Exit.Exit<A, E>): A => {
  if (Exit.isSuccess(exit)) return exit.value
  throw new Error(`expected success, got ${Cause.pretty(exit.cause)}`)
}

/** Calls the server `n` times, the i-th after `i × gap` ms; returns (ok, reason, at) per call. */
const callStaggered = (server: Simulation.SlotServer, n: number, gap = 0) =>
  Effect.all(
    Array.from({ length: n }, (_, i) =>
      Effect.andThen(
        Effect.sleep(i * gap),
        Effect.flatMap(Effect.result(server.call(0)), (result) =>
          Effect.map(Clock.currentTimeMillis, (now) => ({
            ok: Result.isSuccess(result),
            reason: Result.isFailure(result) ? result.failure.reason : undefined,
            at: now
          }))
        )
      )
    ),
    { concurrency: "unbounded" }
  )

const invalid = (exit: Exit.Exit<unknown, unknown>): string => {
  const error = Exit.findErrorOption(exit)
  if (Option.isSome(error) && error.value instanceof Options.InvalidOptions) {
    return error.value.message
  }
  throw new Error(`expected InvalidOptions, got ${String(exit)}`)
}

describe("Simulation.Scenario (scenarios as data)", () => {
  it("the built-in scenarios are instances of the schema", () => {
    for (const scenario of Object.values(Simulation.scenarios)) {
      expect(() => Schema.decodeUnknownSync(Simulation.Scenario)(scenario)).not.toThrow()
    }
    expect(Object.keys(Simulation.scenarios)).toEqual(["overload-2000", "capacity-drop", "many-clients"])
  })

  it.effect("a FIFO queue holds requests for a free slot; a full queue rejects", () =>
    Effect.gen(function* () {
      const program = Effect.gen(function* () {
        const server = yield* Simulation.makeSlotServer({ maxBusy: 1, queue: { size: 1 } })
        return yield* callStaggered(server, 3, 1)
      })
      const results = successValue((yield* Simulation.run(program)).exit)
      expect(results).toEqual([
        { ok: true, reason: undefined, at: 600 }, // served at once
        { ok: true, reason: undefined, at: 1_100 }, // queued at 101, served at 600
        { ok: false, reason: "server busy", at: 152 } // queue full at 102: a rejection holding a slot 50 ms
      ])
    })
  )

  it.effect("a LIFO queue serves the newest first, and a queue timeout answers Overloaded", () =>
    Effect.gen(function* () {
      const lifo = Effect.gen(function* () {
        const server = yield* Simulation.makeSlotServer({
          maxBusy: 1,
          queue: { size: 2, discipline: "lifo" }
        })
        return (yield* callStaggered(server, 3, 1)).map((r) => r.at)
      })
      expect(successValue((yield* Simulation.run(lifo)).exit)).toEqual([600, 1_600, 1_100])
      const timeout = Effect.gen(function* () {
        const server = yield* Simulation.makeSlotServer({
          maxBusy: 1,
          queue: { size: 5, timeout: "200 millis" },
          returnTime: "100 millis"
        })
        return yield* callStaggered(server, 2, 0)
      })
      expect(successValue((yield* Simulation.run(timeout)).exit)).toEqual([
        { ok: true, reason: undefined, at: 700 }, // 100 there, 500 served, 100 back
        { ok: false, reason: "server queue timeout", at: 400 } // queued at 100, timed out at 300, 100 back
      ])
    })
  )

  it.effect("draws random service times reproducibly from the seed", () =>
    Effect.gen(function* () {
      const scenario: Simulation.Scenario = {
        name: "exp",
        operationsPerClient: 2_000,
        arrivalsPerSecond: 100,
        arrivals: "poisson",
        server: {
          maxBusy: 1_000,
          travelTime: 0,
          serviceTime: { distribution: "exponential", mean: "200 millis" }
        }
      }
      const times: Array<number> = []
      const client = () =>
        Effect.succeed<Simulation.Client>({
          run: (attempt) =>
            Effect.flatMap(Clock.currentTimeMillis, (start) =>
              Effect.tap(attempt, () =>
                Effect.map(Clock.currentTimeMillis, (now) => {
                  times.push(now - start)
                })
              )
            )
        })
      const report = yield* Simulation.runScenario(scenario, client, { seed: 7 })
      expect(report.succeeded).toBe(2_000)
      const mean = times.reduce((a, b) => a + b, 0) / times.length
      expect(mean).toBeGreaterThan(185)
      expect(mean).toBeLessThan(215)
      expect(new Set(times.map((t) => Math.round(t))).size).toBeGreaterThan(300)
      // Poisson arrivals: about 20 s for 2000 at 100/s, the same for the same seed, other for another
      const again = yield* Simulation.runScenario(scenario, client, { seed: 7 })
      expect(again.completionMillis).toBe(report.completionMillis)
      expect(report.completionMillis).toBeGreaterThan(18_000)
      expect(report.completionMillis).toBeLessThan(22_500)
      const other = yield* Simulation.optimalCompletionMillis(scenario, { seed: 8 })
      expect(other).not.toBe(report.optimalMillis)
      expect(yield* Simulation.optimalCompletionMillis(scenario, { seed: 7 })).toBe(report.optimalMillis)
      const uniform = yield* Simulation.makeSlotServer({
        maxBusy: 1,
        serviceTime: { distribution: "uniform", min: "2 seconds", max: "1 second" }
      }).pipe(Effect.exit)
      expect(invalid(uniform)).toMatch(/min/)
    })
  )

  it.effect("parses a scenario written as JSON and names a bad field", () =>
    Effect.gen(function* () {
      const text = JSON.stringify({
        name: "json",
        operationsPerClient: 20,
        arrivalsPerSecond: 100,
        server: { maxBusy: 2, queue: { size: 4, discipline: "lifo" }, serviceTime: 100, rejectTime: 0 }
      })
      const scenario = yield* Simulation.parseScenarioJson(text)
      const report = yield* Simulation.runScenario(
        scenario,
        () =>
          Effect.succeed<Simulation.Client>({ run: (a) => Effect.retry(a, Schedule.spaced("10 millis")) }),
        { seed: 1 }
      )
      expect(report.succeeded).toBe(20)
      expect(invalid(yield* Effect.exit(Simulation.parseScenarioJson("{ nope")))).toMatch(/not valid JSON/)
      const bad = JSON.stringify({
        name: "b",
        operationsPerClient: 1,
        arrivalsPerSecond: 1,
        server: { maxBusy: 1, queue: { size: 0 } }
      })
      expect(invalid(yield* Effect.exit(Simulation.parseScenarioJson(bad)))).toMatch(/size/)
      expect(Errors.Overloaded).toBeDefined()
    })
  )
})

import { Admission, Errors, Options } from "@sluice/core"
import { Retry, RetryBudget } from "@sluice/retry"
import { describe, expect, it } from "@effect/vitest"
import {
  Cause,
  Config,
  ConfigProvider,
  Effect,
  Exit,
  Fiber,
  Layer,
  Metric,
  Random,
  Ref,
  Schedule
} from "effect"
import { TestClock } from "effect/testing"

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  const reasons = Exit.isFailure(exit) ? exit.cause.reasons : []
  if (reasons.length === 1 && Cause.isFailReason(reasons[0]!)) return reasons[0].error
  throw new Error("expected a failure")
}

describe("RetryBudget", () => {
  it.effect(
    "1000 concurrent requests against a backend failing 50%: retries = 10% of requests + the floor, exactly",
    () =>
      Effect.gen(function* () {
        const service = yield* RetryBudget.make({ ratio: 0.1, window: "10 seconds", minRetriesPerSecond: 1 })
        const budget = service.forKey("client-a")
        const calls = yield* Ref.make(0)
        // Every second call fails: 50% of all attempts.
        const backend = Effect.flatMap(
          Ref.updateAndGet(calls, (n) => n + 1),
          (n) => (n % 2 === 1 ? Effect.fail(new Errors.Overloaded({ reason: "busy" })) : Effect.succeed(n))
        )
        const withRetries = Retry.makeUnsafe({ maxAttempts: 3, budget, name: "budget-1000" }).apply
        const fiber = yield* Effect.forkChild(
          Effect.forEach(Array.from({ length: 1000 }), () => Effect.exit(withRetries(backend)), {
            concurrency: "unbounded"
          })
        )
        yield* TestClock.adjust("5 seconds") // backoffs are at most 100 + 200 ms
        const exits = yield* Fiber.join(fiber)

        const totalCalls = yield* Ref.get(calls)
        const retries = totalCalls - 1000
        const bound = 0.1 * 1000 + 1 * 10 // ratio × requests + floor × window seconds
        expect(retries).toBe(bound) // demand (≈ 550 retries) far exceeds the budget, so it is used to the last retry
        const failures = exits.filter(Exit.isFailure).map(failureOf)
        const byReason = (reason: string) => failures.filter((e) => e.reason === reason).length
        expect(failures.every((e) => e._tag === "DontRetry")).toBe(true)
        expect(byReason("budget")).toBe(failures.length - byReason("attempts"))
        expect(exits.filter(Exit.isSuccess).length + failures.length).toBe(1000)
        // Every odd call failed; successes are the even calls.
        expect(exits.filter(Exit.isSuccess).length).toBe(Math.floor(totalCalls / 2))
        const stats = yield* budget.stats
        expect(stats).toMatchObject({ requests: 1000, retries: bound, allowed: bound, available: 0 })
        const denials = yield* Metric.value(
          Metric.withAttributes(RetryBudget.metrics.denials, { policy: "budget-1000" })
        )
        expect(denials.count).toBe(byReason("budget"))
      })
  )

  it.effect(
    "1000 requests arriving over one second (10 every 10 ms), 50% of attempts failing: exactly 110 retries",
    () =>
      Effect.gen(function* () {
        const budget = RetryBudget.makeUnsafe().forKey("client-b") // defaults: 10%, 10 s, 1/s
        const calls = yield* Ref.make(0)
        const backend = Effect.flatMap(
          Ref.updateAndGet(calls, (n) => n + 1),
          (n) => (n % 2 === 0 ? Effect.fail(new Errors.Overloaded({ reason: "busy" })) : Effect.succeed(n))
        )
        const withRetries = Retry.makeUnsafe({ budget }).apply // 3 attempts, default jittered backoff
        const fibers: Array<Fiber.Fiber<Exit.Exit<number, Errors.DontRetry>>> = []
        for (let batch = 0; batch < 100; batch++) {
          for (let i = 0; i < 10; i++) fibers.push(yield* Effect.forkChild(Effect.exit(withRetries(backend))))
          yield* TestClock.adjust("10 millis")
        }
        yield* TestClock.adjust("2 seconds") // arrivals end at 1 s; all within one 10 s window
        const exits = yield* Fiber.joinAll(fibers)
        const retries = (yield* Ref.get(calls)) - 1000
        expect(retries).toBe(0.1 * 1000 + 1 * 10)
        expect(exits.filter(Exit.isFailure).length).toBeGreaterThan(0)
        expect((yield* budget.stats).retries).toBe(110)
        // the backoff's jitter draws from a seeded Random: with the default one, about 1 run in 25
        // put too few failures late enough to use the whole allowance
      }).pipe(Random.withSeed("retry-budget-110"))
  )

  it.effect("retries waiting in backoff already count against the budget", () =>
    Effect.gen(function* () {
      const budget = RetryBudget.makeUnsafe({
        ratio: 0,
        minRetriesPerSecond: 0.5,
        window: "10 seconds"
      }).forKey("k")
      // reserve = 0.5/s × 10 s = 5 retries per window
      const calls = yield* Ref.make(0)
      const backend = Effect.andThen(
        Ref.update(calls, (n) => n + 1),
        Effect.fail(new Errors.Overloaded({ reason: "busy" }))
      )
      const policy = Retry.makeUnsafe({
        maxAttempts: 2,
        budget,
        schedule: Schedule.spaced("5 seconds")
      }).apply
      const fiber = yield* Effect.forkChild(
        Effect.forEach(Array.from({ length: 8 }), () => Effect.exit(policy(backend)), {
          concurrency: "unbounded"
        })
      )
      yield* TestClock.adjust("1 second")
      // No retry has run yet, but five are waiting and the budget is spent.
      expect(yield* Ref.get(calls)).toBe(8)
      expect(yield* budget.stats).toMatchObject({ retries: 5, available: 0 })
      yield* TestClock.adjust("10 seconds")
      const exits = yield* Fiber.join(fiber)
      expect(yield* Ref.get(calls)).toBe(13)
      const reasons = exits.map((exit) => failureOf(exit).reason).sort()
      expect(reasons).toEqual([
        "attempts",
        "attempts",
        "attempts",
        "attempts",
        "attempts",
        "budget",
        "budget",
        "budget"
      ])
    })
  )

  it.effect(
    "slides: spent budget comes back once the window has passed; a quiet client keeps its floor",
    () =>
      Effect.gen(function* () {
        const budget = RetryBudget.makeUnsafe({
          ratio: 0.1,
          minRetriesPerSecond: 0.1,
          window: "10 seconds"
        }).forKey("quiet")
        // reserve = 1 retry per window
        yield* budget.recordRequest
        expect(yield* budget.tryWithdraw).toBe(true)
        expect(yield* budget.tryWithdraw).toBe(false)
        yield* TestClock.adjust("11 seconds")
        expect(yield* budget.stats).toMatchObject({ requests: 0, retries: 0, available: 1 })
        expect(yield* budget.tryWithdraw).toBe(true)
        expect(yield* budget.tryWithdraw).toBe(false)
        // Ten requests earn one more retry.
        for (let i = 0; i < 10; i++) yield* budget.recordRequest
        expect(yield* budget.tryWithdraw).toBe(true)
        expect(yield* budget.tryWithdraw).toBe(false)
      })
  )

  it.effect("is shared by every policy naming the same key, through the layer", () =>
    Effect.gen(function* () {
      const calls = yield* Ref.make(0)
      const backend = Effect.andThen(
        Ref.update(calls, (n) => n + 1),
        Effect.fail(new Errors.Overloaded({ reason: "busy" }))
      )
      const a = Retry.withRetry({ maxAttempts: 5, budget: "shared", schedule: Schedule.spaced("1 milli") })
      const b = Retry.withRetry({ maxAttempts: 5, budget: "shared", schedule: Schedule.spaced("1 milli") })
      const other = Retry.withRetry({ maxAttempts: 5, budget: "other", schedule: Schedule.spaced("1 milli") })
      const run = (
        effect: Effect.Effect<never, Errors.DontRetry | Options.InvalidOptions, RetryBudget.RetryBudget>
      ) =>
        Effect.gen(function* () {
          const fiber = yield* Effect.forkChild(effect)
          yield* TestClock.adjust("1 second")
          return failureOf(yield* Fiber.await(fiber))
        })
      // reserve: 0.2/s × 10 s = 2 retries per key and window; ratio 0
      const errorA = yield* run(a(backend))
      expect(errorA).toMatchObject({ reason: "budget", attempts: 3 })
      const errorB = yield* run(b(backend))
      expect(errorB).toMatchObject({ reason: "budget", attempts: 1 })
      const errorOther = yield* run(other(backend))
      expect(errorOther).toMatchObject({ reason: "budget", attempts: 3 })
      expect(yield* Ref.get(calls)).toBe(3 + 1 + 3)
      const service = yield* RetryBudget.RetryBudget
      expect(service.size).toBe(2)
      expect(yield* (yield* RetryBudget.forKey("shared")).stats).toMatchObject({
        requests: 2,
        retries: 2,
        available: 0
      })
    }).pipe(Effect.provide(RetryBudget.layer({ ratio: 0, minRetriesPerSecond: 0.2 })))
  )

  it.effect("layerConfig reads options from a Config and validates them", () =>
    Effect.gen(function* () {
      const config = Config.all({
        ratio: Config.Number("RATIO"),
        minRetriesPerSecond: Config.Number("FLOOR")
      })
      const read = (map: Record<string, string>) =>
        Effect.gen(function* () {
          const budget = yield* RetryBudget.forKey("c")
          for (let i = 0; i < 100; i++) yield* budget.recordRequest
          return (yield* budget.stats).allowed
        }).pipe(
          Effect.provide(RetryBudget.layerConfig(config)),
          Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(map)),
          Effect.exit
        )
      expect(yield* read({ RATIO: "0.2", FLOOR: "0" })).toStrictEqual(Exit.succeed(20))
      const bad = failureOf(yield* read({ RATIO: "3", FLOOR: "0" }))
      expect(bad).toBeInstanceOf(Options.InvalidOptions)
      expect(bad.message).toContain("ratio")
      expect(Exit.isFailure(yield* read({ FLOOR: "0" }))).toBe(true)
    })
  )

  it("bounds the number of keys, forgetting the least recently used", () => {
    const service = RetryBudget.makeUnsafe({ maxKeys: 3 })
    const a = service.forKey("a")
    service.forKey("b")
    service.forKey("c")
    service.forKey("a") // a is now the most recent
    service.forKey("d") // evicts b
    expect(service.size).toBe(3)
    expect(service.forKey("a")).toBe(a)
    const c = service.forKey("c")
    expect(service.forKey("c")).toBe(c)
    for (let i = 0; i < 100; i++) service.forKey(`k${i}`)
    expect(service.size).toBe(3)
  })

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      for (const [bad, field] of [
        [{ ratio: 1.5 }, "ratio"],
        [{ ratio: -0.1 }, "ratio"],
        [{ window: -1 }, "window"],
        [{ minRetriesPerSecond: -1 }, "minRetriesPerSecond"],
        [{ maxKeys: 0 }, "maxKeys"]
      ] as const) {
        const exit = yield* Effect.exit(Layer.build(RetryBudget.layer(bad)).pipe(Effect.scoped))
        const error = failureOf(exit)
        expect(error).toBeInstanceOf(Options.InvalidOptions)
        expect(error.message).toContain(field)
        expect(() => RetryBudget.makeUnsafe(bad)).toThrow(field)
      }
    })
  )
})

describe("RetryBudget gate", () => {
  it.effect("counts every first try that enters through Admission.guard as a request", () =>
    Effect.gen(function* () {
      const budget = RetryBudget.makeUnsafe().forKey("gate")
      yield* Effect.succeed(1).pipe(Admission.guard([budget.gate]))
      yield* Effect.exit(Effect.fail("boom").pipe(Admission.guard([budget.gate])))
      expect((yield* budget.stats).requests).toBe(2)
      expect((yield* budget.stats).retries).toBe(0)
    })
  )

  it.effect(
    "exact allowance: 0.1 × 30 requests allows 3 retries, 0.1 × 29 allows 2 (no floating-point miss)",
    () =>
      Effect.gen(function* () {
        const service = RetryBudget.makeUnsafe({ ratio: 0.1, minRetriesPerSecond: 0 })
        const budget = service.forKey("exact")
        for (let i = 0; i < 29; i++) yield* budget.recordRequest
        expect((yield* budget.stats).available).toBe(2)
        yield* budget.recordRequest
        // 0.1 * 30 is 3.0000000000000004 in floating point; the allowance is exactly 3
        expect((yield* budget.stats).available).toBe(3)
        const granted = [yield* budget.tryWithdraw, yield* budget.tryWithdraw, yield* budget.tryWithdraw]
        expect(granted).toEqual([true, true, true])
        expect(yield* budget.tryWithdraw).toBe(false)
        // 0.7 × 10 is 7.000000000000001: 7 retries, not 8 or 6
        const seven = RetryBudget.makeUnsafe({ ratio: 0.7, minRetriesPerSecond: 0 }).forKey("seven")
        for (let i = 0; i < 10; i++) yield* seven.recordRequest
        let n = 0
        while (yield* seven.tryWithdraw) n++
        expect(n).toBe(7)
      })
  )
})

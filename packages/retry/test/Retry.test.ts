import { Errors, Options } from "@sluice/core"
import { Backoff, Retry, RetryBudget } from "@sluice/retry"
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Cause, Clock, Duration, Effect, Exit, Fiber, Latch, Metric, Ref, Schedule, Stream } from "effect"
import { TestClock } from "effect/testing"

const overloaded = (retryAfter?: Duration.Input) =>
  new Errors.Overloaded(
    retryAfter === undefined
      ? { reason: "busy" }
      : { reason: "busy", retryAfter: Duration.fromInputUnsafe(retryAfter) }
  )

/** An effect that counts its runs and fails with `error` on each. */
const failingWith = <E>(error: E) =>
  Effect.map(Ref.make(0), (calls) => ({
    calls,
    effect: Effect.andThen(
      Ref.update(calls, (n) => n + 1),
      Effect.fail(error)
    )
  }))

/** Runs a forked effect to completion by advancing the TestClock far enough. */
const runWithClock = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.forkChild(effect)
    yield* TestClock.adjust("10 minutes")
    return yield* Fiber.await(fiber)
  })

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  const reasons = Exit.isFailure(exit) ? exit.cause.reasons : []
  if (reasons.length === 1 && Cause.isFailReason(reasons[0]!)) return reasons[0].error
  throw new Error(`expected a failure, got ${String(exit)}`)
}

describe("Retry.withRetry", () => {
  it.effect("runs a successful effect once, at attempt 0", () =>
    Effect.gen(function* () {
      const calls = yield* Ref.make(0)
      const result = yield* Effect.andThen(
        Ref.update(calls, (n) => n + 1),
        Retry.attempt
      ).pipe(Retry.withRetry())
      expect(result).toBe(0)
      expect(yield* Ref.get(calls)).toBe(1)
    })
  )

  it.effect("retries Overloaded maxAttempts times, then fails with DontRetry wrapping it", () =>
    Effect.gen(function* () {
      const error = overloaded()
      const { calls, effect } = yield* failingWith(error)
      const exit = yield* runWithClock(Retry.withRetry(effect, { maxAttempts: 3 }))
      expect(yield* Ref.get(calls)).toBe(3)
      const failure = failureOf(exit)
      expect(failure).toBeInstanceOf(Errors.DontRetry)
      expect(failure).toMatchObject({ reason: "attempts", attempts: 3 })
      expect((failure as Errors.DontRetry).cause).toBe(error)
    })
  )

  it.effect("exposes the attempt number to the retried effect", () =>
    Effect.gen(function* () {
      const seen = yield* Ref.make<ReadonlyArray<number>>([])
      const effect = Retry.attempt.pipe(
        Effect.tap((n) => Ref.update(seen, (xs) => [...xs, n])),
        Effect.flatMap((n) => (n < 2 ? Effect.fail(overloaded()) : Effect.succeed(`ok at ${n}`)))
      )
      const exit = yield* runWithClock(effect.pipe(Retry.withRetry({ maxAttempts: 5 })))
      expect(exit).toStrictEqual(Exit.succeed("ok at 2"))
      expect(yield* Ref.get(seen)).toEqual([0, 1, 2])
      expect(yield* Retry.attempt).toBe(0) // restored outside
    })
  )

  it.effect("an inner policy's first try reads attempt 0 even during an outer retry", () =>
    Effect.gen(function* () {
      const seen = yield* Ref.make<ReadonlyArray<string>>([])
      const outerCalls = yield* Ref.make(0)
      const inner = Retry.attempt.pipe(
        Effect.tap((n) => Ref.update(seen, (xs) => [...xs, `inner ${n}`])),
        Retry.makeUnsafe({ maxAttempts: 1 }).apply
      )
      const outer = Effect.andThen(
        Effect.flatMap(Retry.attempt, (n) => Ref.update(seen, (xs) => [...xs, `outer ${n}`])),
        Effect.flatMap(
          Ref.updateAndGet(outerCalls, (n) => n + 1),
          (n): Effect.Effect<number, Errors.Overloaded | Errors.DontRetry> =>
            n === 1 ? Effect.fail(overloaded()) : inner
        )
      ).pipe(Retry.withRetry({ maxAttempts: 2 }))
      expect(yield* runWithClock(outer)).toStrictEqual(Exit.succeed(0))
      expect(yield* Ref.get(seen)).toEqual(["outer 0", "outer 1", "inner 0"])
    })
  )

  it.effect("passes through a non-retryable error that follows a retry, as the original instance", () =>
    Effect.gen(function* () {
      const throttled = new Errors.Throttled({ key: "k" })
      const calls = yield* Ref.make(0)
      const effect = Effect.flatMap(
        Ref.updateAndGet(calls, (n) => n + 1),
        (n) =>
          n === 1 ? Effect.fail<Errors.Overloaded | Errors.Throttled>(overloaded()) : Effect.fail(throttled)
      )
      const exit = yield* runWithClock(effect.pipe(Retry.withRetry()))
      expect(yield* Ref.get(calls)).toBe(2)
      expect(failureOf(exit)).toBe(throttled)
    })
  )

  it.effect("three layers of policies hit the bottom exactly 3 times, not 27", () =>
    Effect.gen(function* () {
      const { calls, effect: bottom } = yield* failingWith(overloaded())
      const layer = Retry.makeUnsafe({ maxAttempts: 3 }).apply
      // Count how often each layer's policy is entered, to report the attempts per layer.
      const entered = yield* Ref.make({ layer1: 0, layer2: 0, layer3: 0 })
      const count = (key: "layer1" | "layer2" | "layer3") =>
        Ref.update(entered, (n) => ({ ...n, [key]: n[key] + 1 }))
      const layer1 = layer(bottom) // directly above the bottom: the only layer that retries
      const layer2 = layer(Effect.andThen(count("layer1"), layer1))
      const layer3 = layer(Effect.andThen(count("layer2"), layer2))
      const top = Effect.andThen(count("layer3"), layer3)
      expectTypeOf(top).toEqualTypeOf<Effect.Effect<never, Errors.DontRetry>>()
      const exit = yield* runWithClock(top)
      expect(yield* Ref.get(calls)).toBe(3)
      expect(yield* Ref.get(entered)).toEqual({ layer1: 1, layer2: 1, layer3: 1 })
      expect(failureOf(exit)).toMatchObject({ _tag: "DontRetry", reason: "attempts", attempts: 3 })

      // The same stack with a naive retry at every layer multiplies the load.
      const naive = yield* failingWith(overloaded())
      const naiveLayer = <A, E>(e: Effect.Effect<A, E>) => Effect.retry(e, { times: 2 })
      yield* runWithClock(naiveLayer(naiveLayer(naiveLayer(naive.effect))))
      expect(yield* Ref.get(naive.calls)).toBe(27)
    })
  )

  it.effect("never retries DontRetry, Throttled or CircuitOpen, even if the predicate says so", () =>
    Effect.gen(function* () {
      for (const error of [
        new Errors.DontRetry({ reason: "server" }),
        new Errors.Throttled({ key: "k" }),
        new Errors.CircuitOpen({ name: "c", halfOpenAt: 0, retryAfter: Duration.seconds(1) })
      ]) {
        const { calls, effect } = yield* failingWith(error)
        const exit = yield* runWithClock(effect.pipe(Retry.withRetry({ isRetryable: () => true })))
        expect(yield* Ref.get(calls)).toBe(1)
        expect(failureOf(exit)).toBe(error)
      }
    })
  )

  it.effect("retries QuotaExceeded only after its retryAfter, and only within maxRetryAfter", () =>
    Effect.gen(function* () {
      const soon = new Errors.QuotaExceeded({
        tier: "spike",
        limit: 10,
        remaining: 0,
        retryAfter: Duration.seconds(2)
      })
      const quick = yield* failingWith(soon)
      const times = yield* Ref.make<ReadonlyArray<number>>([])
      const timed = Effect.andThen(
        Effect.flatMap(TestClockNow, (t) => Ref.update(times, (xs) => [...xs, t])),
        quick.effect
      )
      const exit = yield* runWithClock(
        timed.pipe(
          Retry.withRetry({
            maxAttempts: 3,
            schedule: Schedule.spaced("10 millis"),
            maxRetryAfter: "5 seconds"
          })
        )
      )
      expect(yield* Ref.get(quick.calls)).toBe(3)
      const seen = yield* Ref.get(times)
      expect(seen[1]! - seen[0]!).toBe(2000)
      expect(seen[2]! - seen[1]!).toBe(2000)
      expect(failureOf(exit)).toMatchObject({ reason: "attempts", cause: soon })

      const late = new Errors.QuotaExceeded({
        tier: "day",
        limit: 10,
        remaining: 0,
        retryAfter: Duration.hours(1)
      })
      const slow = yield* failingWith(late)
      const lateExit = yield* runWithClock(slow.effect.pipe(Retry.withRetry({ maxRetryAfter: "5 seconds" })))
      expect(yield* Ref.get(slow.calls)).toBe(1)
      expect(failureOf(lateExit)).toMatchObject({ _tag: "DontRetry", reason: "not-retryable", attempts: 1 })
    })
  )

  it.effect("clamps an absurd retryAfter on Overloaded to maxRetryAfter", () =>
    Effect.gen(function* () {
      const { calls, effect } = yield* failingWith(overloaded(Duration.days(365 * 10)))
      const fiber = yield* Effect.forkChild(
        effect.pipe(
          Retry.withRetry({
            maxAttempts: 2,
            schedule: Schedule.spaced("1 milli"),
            maxRetryAfter: "20 seconds"
          })
        )
      )
      yield* TestClock.adjust("19999 millis")
      expect(yield* Ref.get(calls)).toBe(1)
      yield* TestClock.adjust("1 milli")
      expect(yield* Ref.get(calls)).toBe(2)
      expect(failureOf(yield* Fiber.await(fiber))).toMatchObject({ reason: "attempts", attempts: 2 })
    })
  )

  it.effect("waits the schedule's delays between attempts", () =>
    Effect.gen(function* () {
      const { calls, effect } = yield* failingWith(overloaded())
      const fiber = yield* Effect.forkChild(
        effect.pipe(Retry.withRetry({ maxAttempts: 4, schedule: Backoff.exponential({ base: "1 second" }) }))
      )
      yield* TestClock.adjust("999 millis")
      expect(yield* Ref.get(calls)).toBe(1)
      yield* TestClock.adjust("1 milli")
      expect(yield* Ref.get(calls)).toBe(2)
      yield* TestClock.adjust("2 seconds")
      expect(yield* Ref.get(calls)).toBe(3)
      yield* TestClock.adjust("4 seconds")
      expect(yield* Ref.get(calls)).toBe(4)
      expect(failureOf(yield* Fiber.await(fiber))).toMatchObject({ reason: "attempts", attempts: 4 })
    })
  )

  it.effect("a zero delay arms no timer", () =>
    Effect.gen(function* () {
      const clock = yield* Clock.Clock
      const sleeps: Array<number> = []
      const counting: typeof clock = Object.create(clock, {
        sleep: { value: (d: Duration.Duration) => (sleeps.push(Duration.toMillis(d)), clock.sleep(d)) }
      })
      const { calls, effect } = yield* failingWith(overloaded())
      const exit = yield* effect.pipe(
        Retry.withRetry({ maxAttempts: 50, schedule: Schedule.forever }),
        Effect.exit,
        Effect.provideService(Clock.Clock, counting)
      )
      expect(yield* Ref.get(calls)).toBe(50)
      expect(sleeps).toEqual([])
      expect(failureOf(exit)).toMatchObject({ reason: "attempts", attempts: 50 })
    })
  )

  it.effect("a schedule that stops ends the retries early", () =>
    Effect.gen(function* () {
      const { calls, effect } = yield* failingWith(overloaded())
      const exit = yield* runWithClock(
        effect.pipe(Retry.withRetry({ maxAttempts: 10, schedule: Schedule.recurs(1) }))
      )
      expect(yield* Ref.get(calls)).toBe(2)
      expect(failureOf(exit)).toMatchObject({ reason: "attempts", attempts: 2 })
    })
  )

  it.effect("passes other errors through untouched and never retries defects", () =>
    Effect.gen(function* () {
      const { calls, effect } = yield* failingWith("plain" as const)
      const exit = yield* runWithClock(effect.pipe(Retry.withRetry()))
      expect(yield* Ref.get(calls)).toBe(1)
      expect(failureOf(exit)).toBe("plain")

      const dies = yield* Ref.make(0)
      const defect = yield* runWithClock(
        Effect.andThen(
          Ref.update(dies, (n) => n + 1),
          Effect.die("bug")
        ).pipe(Retry.withRetry())
      )
      expect(yield* Ref.get(dies)).toBe(1)
      expect(Exit.isFailure(defect) && Cause.hasDies(defect.cause)).toBe(true)
    })
  )

  it.effect(
    "a custom predicate retries marked transport errors; a predicate refusing a Retryable yields DontRetry",
    () =>
      Effect.gen(function* () {
        class Transport extends Error {
          readonly _tag = "Transport"
        }
        const transport = yield* failingWith(new Transport("socket hang up"))
        const custom = transport.effect.pipe(
          Retry.makeUnsafe({ isRetryable: (e: unknown) => Errors.isRetryable(e) || e instanceof Transport })
            .apply
        )
        expectTypeOf(custom).toEqualTypeOf<Effect.Effect<never, Transport | Errors.DontRetry>>()
        const exit = yield* runWithClock(custom)
        expect(yield* Ref.get(transport.calls)).toBe(3)
        expect(failureOf(exit)).toMatchObject({ _tag: "DontRetry", reason: "attempts" })

        const marked = yield* failingWith(Errors.markRetryable(new Transport("reset")))
        const markedPolicy = marked.effect.pipe(Retry.makeUnsafe().apply)
        expectTypeOf(markedPolicy).toEqualTypeOf<Effect.Effect<never, Errors.DontRetry>>()
        yield* runWithClock(markedPolicy)
        expect(yield* Ref.get(marked.calls)).toBe(3)

        const refused = yield* failingWith(overloaded())
        const refusedExit = yield* runWithClock(
          refused.effect.pipe(Retry.withRetry({ isRetryable: () => false }))
        )
        expect(yield* Ref.get(refused.calls)).toBe(1)
        expect(failureOf(refusedExit)).toMatchObject({ _tag: "DontRetry", reason: "not-retryable" })
      })
  )

  it.effect(
    "schedules no retry that could not start before the caller's deadline, and spends no budget on it",
    () =>
      Effect.gen(function* () {
        const budget = RetryBudget.makeUnsafe({ minRetriesPerSecond: 1000 }).forKey("deadline")
        // Within the budget's window: the clock moves one second per run.
        const run = <A, E>(effect: Effect.Effect<A, E>) =>
          Effect.flatMap(Effect.forkChild(effect), (fiber) =>
            Effect.andThen(TestClock.adjust("1 second"), Fiber.await(fiber))
          )
        const failing = yield* failingWith(overloaded())
        // Attempts at 0, 100 and 200 ms; the next would start at 300 ms, the deadline.
        const exit = yield* run(
          failing.effect.pipe(
            Retry.withRetry({ maxAttempts: 10, schedule: Schedule.spaced("100 millis"), budget }),
            Effect.provideService(Retry.currentDeadline, 300)
          )
        )
        expect(failureOf(exit)).toMatchObject({ _tag: "DontRetry", reason: "timeout", attempts: 3 })
        expect(yield* Ref.get(failing.calls)).toBe(3)
        expect((yield* budget.stats).retries).toBe(2)
        // A retry hint that ends past the deadline is not waited for either.
        const now = yield* Clock.currentTimeMillis
        const hinted = yield* failingWith(overloaded("1 second"))
        const hintedExit = yield* run(
          hinted.effect.pipe(
            Retry.withRetry({ budget }),
            Effect.provideService(Retry.currentDeadline, now + 500)
          )
        )
        expect(failureOf(hintedExit)).toMatchObject({ _tag: "DontRetry", reason: "timeout", attempts: 1 })
        expect(yield* Ref.get(hinted.calls)).toBe(1)
        expect((yield* budget.stats).retries).toBe(2)
      })
  )

  it.effect("retries TimeoutError", () =>
    Effect.gen(function* () {
      const calls = yield* Ref.make(0)
      const slow = Effect.andThen(
        Ref.update(calls, (n) => n + 1),
        Effect.never
      ).pipe(Effect.timeout("1 second"))
      const policy = slow.pipe(Retry.withRetry({ schedule: Schedule.spaced("1 milli") }))
      expectTypeOf(policy).toEqualTypeOf<Effect.Effect<never, Errors.DontRetry | Options.InvalidOptions>>()
      const exit = yield* runWithClock(policy)
      expect(yield* Ref.get(calls)).toBe(3)
      expect(failureOf(exit)).toMatchObject({ reason: "attempts" })
    })
  )

  it("makeUnsafe rejects bad options naming the field", () => {
    expect(() => Retry.makeUnsafe({ maxAttempts: 0 })).toThrow(/maxAttempts/)
    expect(() => Retry.makeUnsafe({ maxAttempts: 1.5 })).toThrow(/maxAttempts/)
    expect(() => Retry.makeUnsafe({ maxAttempts: -1 })).toThrow(Options.InvalidOptions)
    expect(() => Retry.makeUnsafe({ maxRetryAfter: Number.NaN })).toThrow(/maxRetryAfter/)
    expect(() => Retry.makeUnsafe({ schedule: "fast" as any })).toThrow(/schedule/)
    expect(() => Retry.makeUnsafe({ budget: "" as any })).toThrow(/budget/)
    expect(() => Retry.makeUnsafe({ isRetryable: true as any })).toThrow(/isRetryable/)
  })

  it.effect("counts attempts, retries and give-ups by reason in metrics", () =>
    Effect.gen(function* () {
      const name = "metrics-test"
      const { effect } = yield* failingWith(overloaded())
      yield* runWithClock(effect.pipe(Retry.withRetry({ maxAttempts: 3, name })))
      yield* runWithClock(Effect.succeed(1).pipe(Retry.withRetry({ name })))
      const attempts = yield* Metric.value(Metric.withAttributes(Retry.metrics.attempts, { policy: name }))
      const retries = yield* Metric.value(Metric.withAttributes(Retry.metrics.retries, { policy: name }))
      const giveUps = yield* Metric.value(
        Metric.withAttributes(Retry.metrics.giveUps, { policy: name, reason: "attempts" })
      )
      expect(attempts.count).toBe(4)
      expect(retries.count).toBe(2)
      expect(giveUps.count).toBe(1)
    })
  )
})

describe("Retry metrics", () => {
  it.effect("go to the fiber's MetricRegistry, with its CurrentMetricAttributes added", () =>
    Effect.gen(function* () {
      const { effect } = yield* failingWith(overloaded())
      yield* runWithClock(effect.pipe(Retry.withRetry({ maxAttempts: 2, name: "registry-test" })))
      const attempts = yield* Metric.value(
        Metric.withAttributes(Retry.metrics.attempts, { policy: "registry-test", region: "eu" })
      )
      expect(attempts.count).toBe(2)
    }).pipe(
      Effect.provideService(Metric.CurrentMetricAttributes, { region: "eu" }),
      Effect.provideService(Metric.MetricRegistry, new Map())
    )
  )
})

describe("Retry.withRetry types", () => {
  it("removes the retryable errors and adds DontRetry", () => {
    type Call = Effect.Effect<
      string,
      Errors.Overloaded | Errors.QuotaExceeded | Errors.Throttled | Errors.CircuitOpen
    >
    const call = Effect.fail(overloaded()) as unknown as Call
    expectTypeOf(call.pipe(Retry.withRetry())).toEqualTypeOf<
      Effect.Effect<string, Errors.Throttled | Errors.CircuitOpen | Errors.DontRetry | Options.InvalidOptions>
    >()
    expectTypeOf(Retry.withRetry(call, { maxAttempts: 2 })).toEqualTypeOf<
      Effect.Effect<string, Errors.Throttled | Errors.CircuitOpen | Errors.DontRetry | Options.InvalidOptions>
    >()
    expectTypeOf(Retry.makeUnsafe({ maxAttempts: 2 }).apply(call)).toEqualTypeOf<
      Effect.Effect<string, Errors.Throttled | Errors.CircuitOpen | Errors.DontRetry>
    >()
    // A layer above cannot retry what is left: nothing retryable remains.
    type Above = Retry.PolicyError<Retry.PolicyError<Errors.Overloaded>>
    expectTypeOf<Above>().toEqualTypeOf<Errors.DontRetry>()
    expectTypeOf<Errors.RetryablePart<Above>>().toEqualTypeOf<never>()
  })

  it("requires RetryBudget in context only when the budget is named by key", () => {
    const call = Effect.succeed(1)
    const budget = RetryBudget.makeUnsafe().forKey("a")
    expectTypeOf(call.pipe(Retry.withRetry({ budget }))).toEqualTypeOf<
      Effect.Effect<number, Errors.DontRetry | Options.InvalidOptions>
    >()
    expectTypeOf(call.pipe(Retry.withRetry({ budget: "a" }))).toEqualTypeOf<
      Effect.Effect<number, Errors.DontRetry | Options.InvalidOptions, RetryBudget.RetryBudget>
    >()
  })
})

const TestClockNow = Effect.clockWith((clock) => clock.currentTimeMillis)

describe("Retry.withRetry, data-first and data-last", () => {
  it.effect("is data-first and data-last; invalid options are a typed failure, never a throw", () =>
    Effect.gen(function* () {
      expect(yield* Retry.withRetry(Effect.succeed(1), { maxAttempts: 2 })).toBe(1)
      expect(yield* Effect.succeed(2).pipe(Retry.withRetry({ maxAttempts: 2 }))).toBe(2)
      const cfg: { maxAttempts?: number | undefined } = {}
      expect(yield* Effect.succeed(3).pipe(Retry.withRetry({ maxAttempts: cfg.maxAttempts }))).toBe(3)
      for (const [options, field] of [
        [{ maxAttempts: 0 }, /maxAttempts/],
        [{ maxRetryAfter: -1 }, /maxRetryAfter/],
        [{ maxRetryAfter: "-5 seconds" }, /maxRetryAfter/],
        [{ budget: "" }, /budget/]
      ] as const) {
        const make = () => Retry.withRetry(options as Retry.PolicyOptions)
        expect(make).not.toThrow()
        const error = yield* Effect.flip(Effect.succeed(1).pipe(make()))
        expect(error).toBeInstanceOf(Options.InvalidOptions)
        expect((error as Options.InvalidOptions).message).toMatch(field)
        const fromMake = yield* Effect.flip(Retry.make(options as Retry.MakeOptions))
        expect(fromMake.message).toMatch(field)
      }
      expect(() => Retry.makeUnsafe({ maxAttempts: 0 })).toThrow(Options.InvalidOptions)
    }).pipe(Effect.provide(RetryBudget.layer()))
  )
})

describe("Retry events", () => {
  it.effect("publishes RetryScheduled and GaveUp to RetryEvents in context", () =>
    Effect.gen(function* () {
      const collected = yield* Retry.events.pipe(Stream.take(3), Stream.runCollect, Effect.forkChild)
      yield* Effect.yieldNow
      const fiber = yield* Effect.forkChild(
        Effect.fail(overloaded()).pipe(
          Retry.withRetry({ name: "api", maxAttempts: 3, schedule: Schedule.spaced("10 millis") })
        )
      )
      yield* TestClock.adjust("1 second")
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error).toMatchObject({ _tag: "DontRetry", reason: "attempts", attempts: 3 })
      const events = [...(yield* Fiber.join(collected))]
      expect(events.map((e) => e._tag)).toEqual(["RetryScheduled", "RetryScheduled", "GaveUp"])
      expect(events[0]).toMatchObject({ policy: "api", attempt: 1, delayMillis: 10 })
      expect(events[1]).toMatchObject({ attempt: 2 })
      expect(events[2]).toMatchObject({ _tag: "GaveUp", reason: "attempts", attempts: 3 })
    }).pipe(Effect.provide(Retry.layerEvents()))
  )

  it.effect("without RetryEvents in context a policy needs nothing and publishes nothing", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(Effect.fail(overloaded()).pipe(Retry.withRetry({ maxAttempts: 1 })))
      expect(Exit.isFailure(exit)).toBe(true)
    })
  )

  it.effect("a subscriber that falls behind loses the oldest events", () =>
    Effect.gen(function* () {
      const service = yield* Retry.RetryEvents
      const busy = yield* Latch.make()
      const seen: Array<number> = []
      // The subscriber is stuck on its first event while four more arrive: room for two.
      const subscriber = yield* service.events.pipe(
        Stream.take(3),
        Stream.runForEach((event) =>
          Effect.andThen(
            Effect.sync(() => seen.push((event as Retry.GaveUp).attempts)),
            seen.length === 0 ? busy.await : Effect.void
          )
        ),
        Effect.forkChild
      )
      const gaveUp = (attempts: number): Retry.Event => ({
        _tag: "GaveUp",
        policy: undefined,
        reason: "attempts",
        attempts,
        error: undefined,
        at: 0
      })
      yield* Effect.yieldNow
      service.publishUnsafe(gaveUp(1))
      yield* Effect.yieldNow
      for (const n of [2, 3, 4, 5]) service.publishUnsafe(gaveUp(n))
      yield* busy.open
      yield* Fiber.join(subscriber)
      expect(seen).toEqual([1, 4, 5])
    }).pipe(Effect.provide(Retry.layerEvents(2)))
  )
})

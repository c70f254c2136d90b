import {
  AdaptiveThrottle,
  ConcurrencyLimiter,
  CongestionWindow,
  LimitAlgorithm,
  LoadShedder
} from "@sluice/adaptive"
import { Admission, CircuitBreaker, Criticality, Errors, Options } from "@sluice/core"
import { Backoff, Retry, RetryBudget } from "@sluice/retry"
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Cause, Clock, Data, Deferred, Effect, Exit, Fiber, Layer, Option, Random } from "effect"
import { TestClock } from "effect/testing"
import fc from "fast-check"

/** Wraps a gate and counts its open tickets; a ticket settled twice drives the count below zero. */
const counting = <T, E>(gate: Admission.Gate<T, E>) => {
  const counts = { open: 0, entered: 0, settled: 0, negative: false }
  const wrapped: Admission.Gate<T, E> = {
    tryEnter: (entry) => {
      const result = gate.tryEnter(entry)
      if (result !== Admission.Wait && (result as { readonly _tag?: unknown } | null)?._tag !== "Refused") {
        counts.open++
        counts.entered++
      }
      return result
    },
    enter: (entry) =>
      Effect.map(gate.enter(entry), (ticket) => {
        counts.open++
        counts.entered++
        return ticket
      }),
    settle: (ticket, outcome, cause) => {
      counts.open--
      counts.settled++
      if (counts.open < 0) counts.negative = true
      gate.settle(ticket, outcome, cause)
    },
    isDrop: gate.isDrop
  }
  return { gate: wrapped, counts }
}

describe("gates of every policy under one Admission.guard", () => {
  it.effect("a breaker outside a limiter that refuses locally is not opened by the refusals", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ name: "outside", consecutiveFailures: 1 })
      const limiter = yield* ConcurrencyLimiter.make({
        algorithm: () => LimitAlgorithm.fixed(1),
        maxQueue: 0
      })
      const guard = Admission.guard([breaker.gate, limiter.gate])
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.forkChild(guard(Deferred.await(release)))
      yield* Effect.yieldNow
      expect(limiter.inFlight).toBe(1)
      for (let i = 0; i < 50; i++) {
        const exit = yield* Effect.exit(guard(Effect.succeed("never runs")))
        const error = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : Option.none()
        expect(Option.isSome(error) && error.value instanceof Errors.Overloaded && error.value.origin).toBe(
          "local"
        )
      }
      expect(yield* breaker.state).toBe("closed")
      // The caller giving up counts nothing either.
      yield* Fiber.interrupt(holder)
      expect(yield* breaker.state).toBe("closed")
      expect(limiter.inFlight).toBe(0)
      // A remote drop that got through the limiter does count.
      yield* Effect.exit(guard(Effect.fail(new Errors.Overloaded({ reason: "503" }))))
      expect(yield* breaker.state).toBe("open")
    })
  )

  it("property: throttle, breaker, shedder, limiter and budget settle every ticket exactly once", async () => {
    const step = fc.record({
      work: fc.constantFrom("ok", "drop", "fail", "die", "hold", "interrupt"),
      level: fc.constantFrom(...Criticality.levels),
      release: fc.nat({ max: 3 }),
      advance: fc.constantFrom(0, 1, 50, 1000)
    })
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), (script) =>
        Effect.gen(function* () {
          const throttle = yield* AdaptiveThrottle.make({ minRequestRate: 0 })
          const breaker = yield* CircuitBreaker.make({
            name: "property",
            consecutiveFailures: 2,
            openFor: "100 millis"
          })
          const shedder = yield* LoadShedder.make({ capacity: 2, smoothing: "10 millis" })
          const limiter = yield* ConcurrencyLimiter.make({
            algorithm: () => LimitAlgorithm.fixed(2),
            maxQueue: 1,
            maxWait: "20 millis"
          })
          const budget = RetryBudget.makeUnsafe().forKey("property")
          const gates = [
            counting(throttle.gate("backend")),
            counting(breaker.gate),
            counting(shedder.gate),
            counting(limiter.gate),
            counting(budget.gate)
          ]
          const guard = Admission.guard(gates.map((g) => g.gate))
          const held: Array<[Deferred.Deferred<void>, Fiber.Fiber<unknown, unknown>]> = []
          for (const s of script) {
            const release = yield* Deferred.make<void>()
            const work =
              s.work === "ok"
                ? Effect.void
                : s.work === "drop"
                  ? Effect.fail(new Errors.Overloaded({ reason: "503" }))
                  : s.work === "fail"
                    ? Effect.fail(new Error("app"))
                    : s.work === "die"
                      ? Effect.die("bug")
                      : Deferred.await(release)
            const fiber = yield* Effect.forkChild(guard(work).pipe(Criticality.withCriticality(s.level)))
            yield* Effect.yieldNow
            if (s.work === "interrupt") yield* Fiber.interrupt(fiber)
            else if (s.work === "hold") held.push([release, fiber])
            for (const [gate] of held.splice(0, s.release)) yield* Deferred.succeed(gate, void 0)
            if (s.advance > 0) yield* TestClock.adjust(s.advance)
            for (const g of gates) expect(g.counts.negative).toBe(false)
          }
          for (const [gate] of held) yield* Deferred.succeed(gate, void 0)
          yield* TestClock.adjust(1000)
          for (const [, fiber] of held) yield* Fiber.await(fiber)
          for (const g of gates) {
            expect(g.counts.negative).toBe(false)
            expect(g.counts.open).toBe(0)
            expect(g.counts.settled).toBe(g.counts.entered)
          }
          expect(limiter.inFlight).toBe(0)
          expect(limiter.queued).toBe(0)
          expect(shedder.activeUnsafe()).toBe(0)
        }).pipe(Effect.scoped, Effect.provide(TestClock.layer()), Effect.runPromise)
      ),
      { numRuns: 40 }
    )
  })
})

class BackendError extends Data.TaggedError("BackendError")<{ readonly code: number }> {}

type Outcome = "ok" | "overloaded" | "error" | "slow" | "slow-overloaded"

const KEY = "backend"

/** A retry policy around the throttle's and the limiter's gates, and the same policies nested as combinators. */
interface Built {
  readonly guard: <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, Retry.PolicyError<E | Errors.Throttled | Errors.Overloaded>, R>
  readonly composed: <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, Retry.PolicyError<E | Errors.Throttled | Errors.Overloaded>, R>
  readonly retry: Retry.Policy
  readonly throttle: AdaptiveThrottle.Service
  readonly limiters: ConcurrencyLimiter.Service
  readonly budget: RetryBudget.Budget
}

const compose = (
  retry: Retry.Policy,
  throttle: AdaptiveThrottle.Service,
  limiters: ConcurrencyLimiter.Service,
  budget: RetryBudget.Budget
): Built => ({
  guard: retry.around([throttle.gate(KEY), limiters.gate(KEY)]),
  composed: (self) => retry.apply(throttle.withThrottle(limiters.withLimiter(self, KEY), KEY)),
  retry,
  throttle,
  limiters,
  budget
})

/** Fresh services with small windows so that probabilities, budgets and windows move within a test. */
const build = (
  limiter: { readonly initial?: number; readonly maxQueue?: number; readonly minRequestRate?: number } = {}
) =>
  Effect.gen(function* () {
    const throttle = yield* AdaptiveThrottle.make({
      window: "10 seconds",
      buckets: 10,
      minRequestRate: limiter.minRequestRate ?? 0.3
    })
    const limiters = yield* ConcurrencyLimiter.makeService({
      algorithm: CongestionWindow.factory({ initial: limiter.initial ?? 2 }),
      maxQueue: limiter.maxQueue ?? 2
    })
    const budget = (yield* RetryBudget.make({ window: "10 seconds", minRetriesPerSecond: 0.2 })).forKey(
      "client"
    )
    const retry = Retry.makeUnsafe({
      maxAttempts: 3,
      schedule: Backoff.exponential({ base: "10 millis" }),
      budget
    })
    return compose(retry, throttle, limiters, budget)
  })

/** A backend that plays `outcomes` in the order attempts reach it. */
const scriptedBackend = (outcomes: ReadonlyArray<Outcome>) => {
  const state = { attempts: 0 }
  const backend = Effect.suspend((): Effect.Effect<number, Errors.Overloaded | BackendError> => {
    const outcome = outcomes[state.attempts % outcomes.length]!
    state.attempts++
    switch (outcome) {
      case "ok":
        return Effect.succeed(state.attempts)
      case "overloaded":
        return Effect.fail(new Errors.Overloaded({ reason: "backend busy" }))
      case "error":
        return Effect.fail(new BackendError({ code: 404 }))
      case "slow":
        return Effect.as(Effect.sleep("30 millis"), state.attempts)
      case "slow-overloaded":
        return Effect.andThen(
          Effect.sleep("20 millis"),
          Effect.fail(new Errors.Overloaded({ reason: "late" }))
        )
    }
  })
  return { state, backend }
}

/** Runs `effect` in a fiber while virtual time passes, so backoffs and slow answers complete. */
const virtual = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.forkChild(effect)
    yield* TestClock.adjust("1 second")
    return yield* Fiber.await(fiber)
  })

const render = (exit: Exit.Exit<unknown, unknown>): string => {
  if (Exit.isSuccess(exit)) return `ok:${String(exit.value)}`
  const failure = Cause.findErrorOption(exit.cause)
  if (failure._tag === "None") return Cause.hasInterruptsOnly(exit.cause) ? "interrupted" : "defect"
  const error = failure.value as {
    readonly _tag: string
    readonly reason?: unknown
    readonly cause?: unknown
  }
  if (error._tag === "DontRetry") {
    const cause = error.cause as { readonly _tag?: string; readonly reason?: unknown } | undefined
    const inner = cause?._tag === "Overloaded" ? `Overloaded(${String(cause.reason)})` : cause?._tag
    return `DontRetry(${String(error.reason)}, ${inner})`
  }
  return error._tag === "Overloaded" ? `Overloaded(${String(error.reason)})` : error._tag
}

const snapshot = (built: Built) =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const limiter = built.limiters.getUnsafe(KEY)
    return {
      limiter: {
        limit: limiter.limit,
        inFlight: limiter.inFlight,
        queued: limiter.queued,
        nextId: limiter.nextId
      },
      throttle: built.throttle.statsUnsafe(KEY, now),
      probabilities: Criticality.levels.map((level) => built.throttle.probabilityUnsafe(KEY, level, now)),
      budget: built.budget.statsUnsafe(now)
    }
  })

interface Batch {
  readonly levels: ReadonlyArray<Criticality.Criticality>
  readonly gapMillis: number
}

/** Runs the batches (each batch's requests concurrently) through one composition, in virtual time. */
const scenario = (
  mode: "fused" | "composed",
  batches: ReadonlyArray<Batch>,
  outcomes: ReadonlyArray<Outcome>,
  seed: number
) =>
  Effect.gen(function* () {
    const built = yield* build()
    const { backend, state } = scriptedBackend(outcomes)
    const call = mode === "fused" ? built.guard(backend) : built.composed(backend)
    const results: Array<string> = []
    for (const batch of batches) {
      const fibers = yield* Effect.forEach(batch.levels, (level) =>
        Effect.forkChild(Criticality.withCriticality(call, level))
      )
      // Long enough for every backoff, slow answer and queued waiter of the batch.
      yield* TestClock.adjust("1 second")
      for (const fiber of fibers) results.push(render(yield* Fiber.await(fiber)))
      yield* TestClock.adjust(batch.gapMillis)
    }
    return { results, attempts: state.attempts, ...(yield* snapshot(built)) }
  }).pipe(Random.withSeed(seed), Effect.provide(TestClock.layer()))

const outcomeArb = fc.constantFrom<Outcome>(
  "ok",
  "ok",
  "ok",
  "overloaded",
  "overloaded",
  "error",
  "slow",
  "slow-overloaded"
)
const batchArb: fc.Arbitrary<Batch> = fc.record({
  levels: fc.array(fc.constantFrom(...Criticality.levels), { minLength: 1, maxLength: 4 }),
  gapMillis: fc.integer({ min: 0, max: 3000 })
})

describe("Retry.Policy.around over the throttle and limiter gates", () => {
  it.effect("the success path returns the value and leaves every layer settled", () =>
    Effect.gen(function* () {
      const built = yield* build()
      for (let i = 0; i < 5; i++) expect(yield* built.guard(Effect.succeed(i))).toBe(i)
      const state = yield* snapshot(built)
      expect(state.limiter).toEqual({ limit: 2, inFlight: 0, queued: 0, nextId: 5 })
      expect(state.throttle).toEqual({ requests: 5, accepts: 5, inFlight: 0 })
      expect(state.budget.requests).toBe(5)
    })
  )

  it.effect("every attempt, retries included, takes one step through the gates", () =>
    Effect.gen(function* () {
      const built = yield* build({ minRequestRate: 1000 })
      const entries = { throttle: 0, limiter: 0 }
      const counted = <T, E>(
        gate: Admission.Gate<T, E>,
        name: keyof typeof entries
      ): Admission.Gate<T, E> => ({
        ...gate,
        tryEnter: (entry) => {
          entries[name]++
          return gate.tryEnter(entry)
        }
      })
      const guard = Retry.makeUnsafe({ maxAttempts: 3, budget: built.budget }).around([
        counted(built.throttle.gate(KEY), "throttle"),
        counted(built.limiters.gate(KEY), "limiter")
      ])
      yield* guard(Effect.succeed(1))
      expect(entries).toEqual({ throttle: 1, limiter: 1 })
      const { backend, state } = scriptedBackend(["overloaded", "overloaded", "ok"])
      expect(yield* Effect.flatten(virtual(guard(backend)))).toBe(3)
      expect(state.attempts).toBe(3)
      expect(entries).toEqual({ throttle: 4, limiter: 4 })
    })
  )

  it.effect("retryable errors come out as DontRetry once attempts are spent; others pass through", () =>
    Effect.gen(function* () {
      const built = yield* build({ minRequestRate: 1000 })
      const overloaded = scriptedBackend(["overloaded"])
      const error = yield* Effect.flip(Effect.flatten(virtual(built.guard(overloaded.backend))))
      expect(error).toBeInstanceOf(Errors.DontRetry)
      const dontRetry = error as Errors.DontRetry
      expect([dontRetry.reason, dontRetry.attempts, (dontRetry.cause as Errors.Overloaded)._tag]).toEqual([
        "attempts",
        3,
        "Overloaded"
      ])
      expect(overloaded.state.attempts).toBe(3)
      const notFound = scriptedBackend(["error"])
      const passed = yield* Effect.flip(built.guard(notFound.backend))
      expect(passed).toBeInstanceOf(BackendError)
      expect((passed as BackendError).code).toBe(404)
      expect(notFound.state.attempts).toBe(1)
      const limiter = built.limiters.getUnsafe(KEY)
      expect(limiter.inFlight).toBe(0)
    })
  )

  it.effect(
    "inside another retry layer only the outer layer's attempt is seen outside; its own tries start at 0",
    () =>
      Effect.gen(function* () {
        const built = yield* build()
        const { backend, state } = scriptedBackend(["overloaded", "ok"])
        const seen: Array<number> = []
        const observed = Effect.andThen(
          Effect.flatMap(Retry.attempt, (n) => Effect.sync(() => seen.push(n))),
          backend
        )
        const outer = Retry.makeUnsafe({
          maxAttempts: 2,
          isRetryable: (e: unknown) => e instanceof BackendError
        }).apply
        // The outer policy's second try runs with currentAttempt = 1; the inner policy's own tries start again at 0.
        const result = yield* Effect.flatten(
          virtual(outer(Effect.provideService(built.guard(observed), Retry.currentAttempt, 1)))
        )
        expect(result).toBe(2)
        expect(seen).toEqual([0, 1])
        expect(state.attempts).toBe(2)
      })
  )

  it.effect("a throttle that must draw and a full limiter fall back to the full machinery", () =>
    Effect.gen(function* () {
      const built = yield* build({ initial: 1, maxQueue: 0 })
      const overloaded = scriptedBackend(["overloaded"])
      const outcomes: Array<string> = []
      for (let i = 0; i < 12; i++) outcomes.push(render(yield* virtual(built.guard(overloaded.backend))))
      expect(outcomes).toContain("Throttled")
      // (Budget denials are asserted by the fixed busy script below.)
      expect(outcomes[0]).toBe("DontRetry(attempts, Overloaded(backend busy))")
      // A held permit with maxQueue 0: later calls are refused by the limiter without running.
      const fresh = yield* build({ initial: 1, maxQueue: 0, minRequestRate: 1000 })
      const held = yield* Effect.forkChild(fresh.guard(Effect.never))
      yield* TestClock.adjust("1 millis")
      const ran = scriptedBackend(["ok"])
      const refused = yield* virtual(fresh.guard(ran.backend))
      // A refusal of this process's own limiter is never retried.
      expect(render(refused)).toBe("DontRetry(refused, Overloaded(concurrency limit: limit))")
      expect(ran.state.attempts).toBe(0)
      yield* Fiber.interrupt(held)
      expect(fresh.limiters.getUnsafe(KEY).inFlight).toBe(0)
      expect(render(yield* virtual(fresh.guard(ran.backend)))).toBe("ok:1")
    })
  )

  it("behaves exactly as the composed combinators on random traffic (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(batchArb, { minLength: 1, maxLength: 12 }),
        fc.array(outcomeArb, { minLength: 1, maxLength: 16 }),
        fc.integer(),
        async (batches, outcomes, seed) => {
          const fused = await Effect.runPromise(scenario("fused", batches, outcomes, seed))
          const composed = await Effect.runPromise(scenario("composed", batches, outcomes, seed))
          expect(fused).toEqual(composed)
          expect(fused.limiter.inFlight).toBe(0)
        }
      ),
      { numRuns: 40 }
    )
  })

  it("a fixed busy script reaches every path (throttled, budget, queue-full) and still matches", async () => {
    const batches: Array<Batch> = Array.from({ length: 10 }, (_, i) => ({
      levels: ["CRITICAL", "SHEDDABLE", "CRITICAL", "SHEDDABLE_PLUS", "CRITICAL_PLUS", "SHEDDABLE"],
      gapMillis: i * 200
    }))
    const outcomes: Array<Outcome> = [
      "slow",
      "overloaded",
      "slow-overloaded",
      "ok",
      "slow",
      "overloaded",
      "error"
    ]
    const fused = await Effect.runPromise(scenario("fused", batches, outcomes, 7))
    const composed = await Effect.runPromise(scenario("composed", batches, outcomes, 7))
    expect(fused).toEqual(composed)
    const seen = fused.results.join("\n")
    expect(seen).toContain("Throttled")
    expect(seen).toContain("ok:")
    expect(seen).toContain("BackendError")
    expect(seen).toContain("DontRetry(budget")
    expect(seen).toContain("queue-full")
  })

  it("never leaks a permit under random interruption (property)", async () => {
    const requestArb = fc.record({
      outcome: fc.constantFrom<Outcome>("ok", "overloaded", "error", "slow", "slow-overloaded"),
      level: fc.constantFrom(...Criticality.levels),
      interruptAt: fc.option(fc.integer({ min: 0, max: 60 }), { nil: undefined })
    })
    await fc.assert(
      fc.asyncProperty(
        fc.array(requestArb, { minLength: 1, maxLength: 10 }),
        fc.integer(),
        async (requests, seed) => {
          const program = Effect.gen(function* () {
            const built = yield* build({ initial: 2, maxQueue: 3 })
            const fibers = yield* Effect.forEach(requests, (request) =>
              Effect.forkChild(
                Criticality.withCriticality(
                  built.guard(scriptedBackend([request.outcome]).backend),
                  request.level
                )
              )
            )
            const plan = requests
              .map((request, index) => ({ index, at: request.interruptAt }))
              .filter((p): p is { index: number; at: number } => p.at !== undefined)
              .sort((a, b) => a.at - b.at)
            let now = 0
            for (const { at, index } of plan) {
              if (at > now) yield* TestClock.adjust(at - now)
              now = Math.max(now, at)
              yield* Effect.forkDetach(Fiber.interrupt(fibers[index]!))
              if (index % 2 === 0) yield* Effect.yieldNow
            }
            yield* TestClock.adjust("2 seconds")
            const exits = yield* Effect.forEach(fibers, Fiber.await)
            const limiter = built.limiters.getUnsafe(KEY)
            expect(limiter.inFlight).toBe(0)
            expect(limiter.queued).toBe(0)
            for (const level of Criticality.levels) expect(limiter.inFlightOf(level)).toBe(0)
            // The fast path is usable again afterwards.
            expect(yield* Effect.exit(built.guard(Effect.succeed("after")))).toSatisfy(
              (exit: Exit.Exit<string, unknown>) => Exit.isSuccess(exit) || render(exit) === "Throttled"
            )
            expect(limiter.inFlight).toBe(0)
            return exits
          })
          await Effect.runPromise(program.pipe(Random.withSeed(seed), Effect.provide(TestClock.layer())))
        }
      ),
      { numRuns: 60 }
    )
  })

  it.effect("an interrupted call gives its permit back and counts for nothing in the throttle", () =>
    Effect.gen(function* () {
      const built = yield* build()
      const fiber = yield* Effect.forkChild(built.guard(Effect.never))
      yield* TestClock.adjust("5 millis")
      expect(built.limiters.getUnsafe(KEY).inFlight).toBe(1)
      // Counted before the call, in flight: a request, neither accepted nor rejected yet.
      expect(built.throttle.statsUnsafe(KEY, yield* Clock.currentTimeMillis)).toEqual({
        requests: 1,
        accepts: 0,
        inFlight: 1
      })
      yield* Fiber.interrupt(fiber)
      expect(built.limiters.getUnsafe(KEY).inFlight).toBe(0)
      // The caller gave up: its request is taken back, neither a success nor a drop.
      expect(built.throttle.statsUnsafe(KEY, yield* Clock.currentTimeMillis)).toEqual({
        requests: 0,
        accepts: 0,
        inFlight: 0
      })
    })
  )

  it.effect("the http README's composition runs (fetchItems stubbed)", () => {
    const fetchItems: Effect.Effect<string, Errors.Overloaded | Error> = Effect.succeed("items")
    const program = Effect.gen(function* () {
      const throttle = yield* AdaptiveThrottle.AdaptiveThrottle
      const limiters = yield* ConcurrencyLimiter.ConcurrencyLimiter
      const retry = yield* Retry.make({ maxAttempts: 3, budget: yield* RetryBudget.forKey("my-client") })
      const guard = retry.around([throttle.gate("api.example.com"), limiters.gate("api.example.com")])
      return yield* guard(fetchItems)
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          RetryBudget.layer(),
          AdaptiveThrottle.layer(),
          ConcurrencyLimiter.layer({ algorithm: CongestionWindow.factory() })
        )
      )
    )
    expectTypeOf(program).toEqualTypeOf<
      Effect.Effect<string, Error | Errors.Throttled | Errors.DontRetry | Options.InvalidOptions>
    >()
    return Effect.map(program, (items) => expect(items).toBe("items"))
  })

  it.effect("types: the error type is the nested combinators', with the retryable errors gone", () =>
    Effect.gen(function* () {
      const built = yield* build()
      const call: Effect.Effect<string, Errors.Overloaded | BackendError, never> = Effect.succeed("ok")
      type Expected = Effect.Effect<string, BackendError | Errors.Throttled | Errors.DontRetry>
      expectTypeOf(built.guard(call)).toEqualTypeOf<Expected>()
      expectTypeOf(
        call.pipe(built.retry.around([built.throttle.gate(KEY), built.limiters.gate(KEY)]))
      ).toEqualTypeOf<Expected>()
      const composed = Retry.makeUnsafe({ maxAttempts: 3 }).apply(
        built.throttle.withThrottle(built.limiters.withLimiter(call, KEY), KEY)
      )
      expectTypeOf(built.guard(call)).toEqualTypeOf(composed)
      expect(yield* built.guard(call)).toBe("ok")
    })
  )
})

import { Admission, Errors, Options, Outcome } from "@sluice/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { identity } from "effect/Function"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as PubSub from "effect/PubSub"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as Intervals from "effect/ScheduleIntervals"
import * as Schema from "effect/Schema"
import * as Policy from "@sluice/kernel/retry/Retry"
import * as Stream from "effect/Stream"
import type * as R from "../Retry.js"
import type * as RB from "../RetryBudget.js"
import * as backoff from "./backoff.js"
import * as retryBudget from "./retryBudget.js"

/** @internal */
export const currentAttempt: FiberRef.FiberRef<number> = FiberRef.unsafeMake(0)

/** @internal */
export const attempt: Effect.Effect<number> = FiberRef.get(currentAttempt)

/** @internal */
export const currentDeadline: FiberRef.FiberRef<number> = FiberRef.unsafeMake(Infinity)

const PolicyOptionsSchema = Schema.Struct({
  ...Options.fields(Policy.options),
  name: Schema.optional(Schema.String)
})

const decodeOptions = Options.decodeEither("Retry.withRetry", PolicyOptionsSchema)

/** @internal */
export const attemptsCounter = Metric.counter("sluice_retry_attempts", {
  description: "attempts made by retry policies, first tries included",
  incremental: true
})
/** @internal */
export const retriesCounter = Metric.counter("sluice_retry_retries", {
  description: "retries scheduled by retry policies",
  incremental: true
})
/** @internal */
export const giveUpsCounter = Metric.counter("sluice_retry_give_ups", {
  description: "failures a retry policy turned into DontRetry, by reason",
  incremental: true
})

/** The default: what `Outcome` says a retry policy retries (dropped, or failed and marked retryable). */
const defaultIsRetryable = (error: unknown): boolean => Outcome.isRetryable(Outcome.ofError(error), error)

const invalid = (field: string, message: string) =>
  new Options.InvalidOptions({
    module: "Retry.withRetry",
    message: `Retry.withRetry: invalid options\n└─ ["${field}"]\n   └─ ${message}`
  })

interface Compiled extends Policy.Judge {
  readonly schedule: Schedule.Schedule<unknown, any>
  readonly budget: RB.Budget | string | undefined
  readonly name: string | undefined
  readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  readonly reasonTags: Readonly<Record<Errors.DontRetryReason, ReadonlyArray<MetricLabel.MetricLabel>>>
}

const isBudget = (u: unknown): boolean =>
  Predicate.isObject(u) && typeof (u as RB.Budget).unsafeTryWithdraw === "function"

/** Validates the options; never throws (an invalid option comes back as `InvalidOptions`). */
const compile = (options: R.PolicyOptions | undefined): Either.Either<Compiled, Options.InvalidOptions> => {
  const input = options ?? {}
  const invalidSchedule = input.schedule !== undefined ? backoff.invalidOptionsOf(input.schedule) : undefined
  if (invalidSchedule !== undefined) return Either.left(invalid("schedule", invalidSchedule.message))
  const decoded = decodeOptions(input)
  if (Either.isLeft(decoded)) return Either.left(decoded.left)
  if (input.schedule !== undefined && !Schedule.isSchedule(input.schedule)) {
    return Either.left(invalid("schedule", "expected a Schedule"))
  }
  const issue = Policy.optionsIssue(input, isBudget)
  if (issue !== undefined) return Either.left(invalid(issue.path[0]!, issue.message))
  const { maxAttempts, maxRetryAfter, name } = decoded.right
  // Metric hooks are cached by the identity of the tag array, so build each array once.
  const tags: ReadonlyArray<MetricLabel.MetricLabel> =
    name === undefined ? [] : [MetricLabel.make("policy", name)]
  const reasonTags = {} as Record<Errors.DontRetryReason, ReadonlyArray<MetricLabel.MetricLabel>>
  for (const reason of Errors.DontRetryReason.literals)
    reasonTags[reason] = [...tags, MetricLabel.make("reason", reason)]
  return Either.right({
    maxAttempts,
    maxRetryAfterMillis: Duration.toMillis(maxRetryAfter),
    schedule: input.schedule ?? backoff.defaultSchedule,
    budget: input.budget,
    isRetryable: input.isRetryable ?? defaultIsRetryable,
    isRetryableType: Errors.isRetryable,
    millisOf: backoff.millisOf,
    name,
    tags,
    reasonTags
  })
}

/** @internal the public `Retry.RetryEvents` class has the same key, so they are one tag */
export const RetryEvents = Context.GenericTag<R.RetryEvents, R.EventsService>("@sluice/retry/RetryEvents")

/** @internal */
export const layerEvents = (capacity = 256): Layer.Layer<R.RetryEvents> =>
  Layer.scoped(
    RetryEvents,
    Effect.map(Effect.acquireRelease(PubSub.sliding<R.Event>(capacity), PubSub.shutdown), (pubsub) => ({
      events: Stream.fromPubSub(pubsub),
      unsafePublish: (event: R.Event) => {
        // `unsafeOffer` refuses an event a lagging subscriber has no room for (the new one would
        // be lost); the sliding strategy, run only then, drops that subscriber's oldest instead
        if (!pubsub.unsafeOffer(event)) Effect.runSyncExit(PubSub.publish(pubsub, event))
      }
    }))
  )

/** @internal */
export const events: Stream.Stream<R.Event, never, R.RetryEvents> = Stream.unwrap(
  Effect.map(RetryEvents, (service) => service.events)
)

/** The `RetryEvents` service in the fiber's context, if any (read on the failure path only). */
const eventsOf = (fiber: Fiber.RuntimeFiber<any, any>): R.EventsService | undefined =>
  Option.getOrUndefined(Context.getOption(fiber.getFiberRef(FiberRef.currentContext), RetryEvents))

const giveUp = (
  reason: Errors.DontRetryReason,
  attempts: number,
  cause: unknown,
  config: Compiled
): Effect.Effect<never, Errors.DontRetry> =>
  Effect.withFiberRuntime((fiber) => {
    giveUpsCounter.unsafeUpdate(1, config.reasonTags[reason])
    // Errors failed inside a span come back as proxies; keep the original instance.
    const error = Cause.originalError(cause)
    eventsOf(fiber)?.unsafePublish({
      _tag: "GaveUp",
      policy: config.name,
      reason,
      attempts,
      error,
      at: Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
    })
    return Effect.fail(new Errors.DontRetry({ reason, attempts, cause: error }))
  })

const retryLoop = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  firstError: E,
  config: Compiled,
  budget: RB.Budget | undefined
): Effect.Effect<A, unknown, R> => {
  const first = Policy.verdict(firstError, 1, config)
  if (first !== "retry")
    return first === "pass" ? Effect.fail(firstError) : giveUp(first, 1, firstError, config)
  const schedule = config.schedule
  const loop = Effect.gen(function* () {
    const [sink, deadline] = yield* Effect.withFiberRuntime<readonly [R.EventsService | undefined, number]>(
      (fiber) => Effect.succeed([eventsOf(fiber), fiber.getFiberRef(currentDeadline)])
    )
    let error: unknown = firstError
    let attempts = 1
    let state = schedule.initial
    while (true) {
      if (attempts > 1) {
        const verdict = Policy.verdict(error, attempts, config)
        if (verdict === "pass") return yield* Effect.fail(Cause.originalError(error))
        if (verdict !== "retry") return yield* giveUp(verdict, attempts, error, config)
      }
      const now = yield* Clock.currentTimeMillis
      const [nextState, , decision] = yield* schedule.step(now, error, state)
      state = nextState
      const delay = Policy.nextDelay(
        now,
        ScheduleDecision.isDone(decision) ? undefined : Intervals.start(decision.intervals),
        backoff.hintMillis(error, config.maxRetryAfterMillis),
        deadline
      )
      if (typeof delay === "string") return yield* giveUp(delay, attempts, error, config)
      if (budget !== undefined) {
        const granted = budget.unsafeTryWithdraw(now)
        ;(granted ? retryBudget.withdrawals : retryBudget.denials).unsafeUpdate(1, config.tags)
        if (!granted) return yield* giveUp("budget", attempts, error, config)
      }
      retriesCounter.unsafeUpdate(1, config.tags)
      const attemptNumber = attempts
      sink?.unsafePublish({
        _tag: "RetryScheduled",
        policy: config.name,
        attempt: attemptNumber,
        delayMillis: delay,
        error: Cause.originalError(error),
        at: now
      })
      // A zero delay must not become a timer (the live clock's setTimeout takes at least 1 ms);
      // yielding keeps an immediate retry loop fair to other fibers.
      const wait = delay > 0 ? Effect.sleep(Duration.millis(delay)) : Effect.yieldNow()
      const result = yield* wait.pipe(
        Effect.zipRight(
          Effect.suspend(() => {
            attemptsCounter.unsafeUpdate(1, config.tags)
            return Effect.either(Effect.locally(self, currentAttempt, attemptNumber))
          })
        ),
        // No stack capture: `new Error()` per retry dominated the cost of a retry storm.
        Effect.withSpan("sluice.retry.attempt", {
          captureStackTrace: false,
          attributes: {
            "sluice.retry.attempt": attemptNumber,
            "sluice.retry.delay_ms": delay,
            ...(config.name !== undefined ? { "sluice.retry.policy": config.name } : {})
          }
        })
      )
      attempts++
      if (Either.isRight(result)) return result.right
      error = result.left
    }
  })
  return loop as Effect.Effect<A, unknown, R>
}

const run = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  config: Compiled,
  budget: RB.Budget | undefined
): Effect.Effect<A, unknown, R> => {
  // One primitive for the whole first try: the attempt is usually already 0 (no enclosing
  // retry), so `Effect.locally` (an acquire/use/release) is skipped; the budget reads the
  // clock once, synchronously.
  const start = Effect.withFiberRuntime<A, E, R>((fiber) => {
    budget?.unsafeRecordRequest(
      Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
    )
    attemptsCounter.unsafeUpdate(1, config.tags)
    return fiber.getFiberRef(currentAttempt) === 0 ? self : Effect.locally(self, currentAttempt, 0)
  })
  return Effect.catchAll(start, (error) => retryLoop(self, error, config, budget))
}

/** @internal */
export const withRetry: any = (...args: ReadonlyArray<any>) => {
  const dataFirst = Effect.isEffect(args[0])
  const compiled = compile(dataFirst ? args[1] : args[0])
  const withPolicy = (self: Effect.Effect<any, any, any>) =>
    Either.isLeft(compiled) ? Effect.fail(compiled.left) : apply(self, compiled.right)
  return dataFirst ? withPolicy(args[0]) : withPolicy
}

/**
 * The first try's bookkeeping as a gate, so it shares the one step of `Admission.guard`.
 * Entered only outside another retry layer (see `around`).
 */
const firstTryGate = (config: Compiled, budget: RB.Budget | undefined): Admission.Gate<true, never> =>
  retryBudget.recordingGate((entry) => {
    budget?.unsafeRecordRequest(entry.now)
    attemptsCounter.unsafeUpdate(1, config.tags)
  })

const policyOf = (options: R.MakeOptions | undefined): Either.Either<R.Policy, Options.InvalidOptions> =>
  Either.flatMap(compile(options), (config) =>
    typeof config.budget === "string"
      ? Either.left(
          invalid(
            "budget",
            "Retry.make needs a RetryBudget.Budget handle (look it up with RetryBudget.forKey)"
          )
        )
      : Either.right(policy(config, config.budget))
  )

/** @internal */
export const make = (options?: R.MakeOptions): Effect.Effect<R.Policy, Options.InvalidOptions> =>
  Effect.suspend(() => policyOf(options))

/** @internal */
export const unsafeMake = (options?: R.MakeOptions): R.Policy =>
  Either.getOrThrowWith(policyOf(options), identity)

const policy = (config: Compiled, budget: RB.Budget | undefined): R.Policy => {
  const firstTry = firstTryGate(config, budget)
  return {
    maxAttempts: config.maxAttempts,
    budget,
    apply: (self) => run(self, config, budget) as any,
    around: (gates) => {
      const later = Admission.guard(gates)
      // The first try, the throttle, the limiter … in one step; a failure continues in
      // the retry loop from the guard's own handler.
      const fused = Admission.guard([firstTry, ...gates], (error, self) =>
        retryLoop(later(self), error, config, budget)
      )
      // Inside another retry layer (the fiber's attempt is not 0) the first try must run
      // as the whole policy runs it, with the attempt set back to 0 for its own tries.
      return ((self: Effect.Effect<unknown, unknown, unknown>) =>
        Effect.withFiberRuntime<unknown, unknown, unknown>((fiber) =>
          fiber.getFiberRef(currentAttempt) === 0 ? fused(self) : run(later(self), config, budget)
        )) as any
    }
  }
}

const apply = <A, E, R>(self: Effect.Effect<A, E, R>, config: Compiled): Effect.Effect<A, unknown, any> => {
  const budget = config.budget
  if (typeof budget === "string") {
    return Effect.flatMap(retryBudget.RetryBudget, (service) => run(self, config, service.forKey(budget)))
  }
  return run(self, config, budget)
}

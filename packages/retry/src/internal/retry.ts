import { Admission, Errors, Options, Outcome } from "@sluice/core"
import * as EventHub from "@sluice/core/shared/EventHub"
import * as Meters from "@sluice/core/shared/Meters"
import * as Policy from "@sluice/kernel/retry/Retry"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import { identity } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Predicate from "effect/Predicate"
import * as PubSub from "effect/PubSub"
import * as Pull from "effect/Pull"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as R from "../Retry.js"
import type * as RB from "../RetryBudget.js"
import * as backoff from "./backoff.js"
import * as retryBudget from "./retryBudget.js"

/** @internal */
export const currentAttempt: Context.Reference<number> = Context.Reference<number>(
  "@sluice/retry/CurrentAttempt",
  { defaultValue: () => 0 }
)

/** @internal */
export const attempt: Effect.Effect<number> = currentAttempt

/** @internal */
export const currentDeadline: Context.Reference<number> = Context.Reference<number>(
  "@sluice/retry/CurrentDeadline",
  { defaultValue: () => Infinity }
)

const PolicyOptionsSchema = Schema.Struct({
  ...Options.fields(Policy.options),
  name: Schema.optional(Schema.String),
  // Checked by hand below (a Schedule, a budget or its key, a predicate): declared here so
  // that they are options and any other key is not.
  schedule: Schema.optional(Schema.Unknown),
  budget: Schema.optional(Schema.Unknown),
  isRetryable: Schema.optional(Schema.Unknown)
})

const decodeOptions = Options.decodeResult("Retry.withRetry", PolicyOptionsSchema)

/** @internal */
export const attempts = Meters.counter(
  "sluice_retry_attempts",
  "attempts made by retry policies, first tries included"
)
/** @internal */
export const retries = Meters.counter("sluice_retry_retries", "retries scheduled by retry policies")
/** @internal */
export const giveUps = Meters.counter(
  "sluice_retry_give_ups",
  "failures a retry policy turned into DontRetry, by reason"
)

/** The default: what `Outcome` says a retry policy retries (dropped, or failed and marked retryable). */
const defaultIsRetryable = (error: unknown): boolean => Outcome.isRetryable(Outcome.ofError(error), error)

const invalid = (field: string, message: string) =>
  Options.invalid("Retry.withRetry", [{ path: [field], message }])

/** The counters one policy updates, each series built once (`Meters.Family.of`). */
interface Meters {
  readonly attempts: Metric.Counter<number>
  readonly retries: Metric.Counter<number>
  readonly giveUps: Readonly<Record<Errors.DontRetryReason, Metric.Counter<number>>>
  readonly withdrawals: Metric.Counter<number>
  readonly denials: Metric.Counter<number>
  readonly refunds: Metric.Counter<number>
}

const giveUpsOf = (
  policy: Metric.Metric.AttributeSet | undefined
): Readonly<Record<Errors.DontRetryReason, Metric.Counter<number>>> => {
  const series = {} as Record<Errors.DontRetryReason, Metric.Counter<number>>
  for (const reason of Errors.DontRetryReason.literals) series[reason] = giveUps.of({ ...policy, reason })
  return series
}

/** Shared by every policy without a name (a data-first `withRetry` compiles its options on each call). */
const unnamedGiveUps = giveUpsOf(undefined)

const metersOf = (name: string | undefined): Meters => {
  const policy = name === undefined ? undefined : { policy: name }
  return {
    attempts: attempts.of(policy),
    retries: retries.of(policy),
    giveUps: policy === undefined ? unnamedGiveUps : giveUpsOf(policy),
    withdrawals: retryBudget.withdrawals.of(policy),
    denials: retryBudget.denials.of(policy),
    refunds: retryBudget.refunds.of(policy)
  }
}

interface Compiled extends Policy.Judge {
  readonly schedule: Schedule.Schedule<unknown, any>
  readonly budget: RB.Budget | string | undefined
  readonly name: string | undefined
  readonly meters: Meters
}

const isBudget = (u: unknown): boolean =>
  Predicate.hasProperty(u, "tryWithdrawUnsafe") && typeof u.tryWithdrawUnsafe === "function"

/** Validates the options; never throws (an invalid option comes back as `InvalidOptions`). */
const compile = (options: R.PolicyOptions | undefined): Result.Result<Compiled, Options.InvalidOptions> => {
  const input = options ?? {}
  const invalidSchedule = input.schedule !== undefined ? backoff.invalidOptionsOf(input.schedule) : undefined
  if (invalidSchedule !== undefined) return Result.fail(invalid("schedule", invalidSchedule.message))
  const decoded = decodeOptions(input)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  if (input.schedule !== undefined && !Schedule.isSchedule(input.schedule)) {
    return Result.fail(invalid("schedule", "expected a Schedule"))
  }
  const issue = Policy.optionsIssue(input, isBudget)
  if (issue !== undefined) return Result.fail(invalid(issue.path[0]!, issue.message))
  const { maxAttempts, maxRetryAfter, name } = decoded.success
  return Result.succeed({
    maxAttempts,
    maxRetryAfterMillis: Duration.toMillis(maxRetryAfter),
    schedule: input.schedule ?? backoff.defaultSchedule,
    budget: input.budget,
    isRetryable: input.isRetryable ?? defaultIsRetryable,
    isRetryableType: Errors.isRetryable,
    millisOf: backoff.millisOf,
    name,
    meters: metersOf(name)
  })
}

/** @internal the public `Retry.RetryEvents` class has the same key, so they are one service */
export const RetryEvents = Context.Service<R.RetryEvents, R.EventsService>("@sluice/retry/RetryEvents")

/** @internal */
export const layerEvents = (capacity = 256): Layer.Layer<R.RetryEvents> =>
  Layer.effect(
    RetryEvents,
    Effect.map(Effect.acquireRelease(EventHub.make<R.Event>(capacity), PubSub.shutdown), (pubsub) => ({
      events: Stream.fromPubSub(pubsub),
      publishUnsafe: (event: R.Event) => EventHub.publish(pubsub, event)
    }))
  )

/** @internal */
export const events: Stream.Stream<R.Event, never, R.RetryEvents> = Stream.unwrap(
  Effect.map(RetryEvents, (service) => service.events)
)

/** The `RetryEvents` service in the fiber's context, if any (read on the failure path only). */
const eventsOf = (fiber: Fiber.Fiber<unknown, unknown>): R.EventsService | undefined =>
  Context.getOrUndefined(fiber.context, RetryEvents)

const nowOf = (fiber: Fiber.Fiber<unknown, unknown>): number =>
  fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()

const giveUp = (
  reason: Errors.DontRetryReason,
  attempts: number,
  error: unknown,
  config: Compiled
): Effect.Effect<never, Errors.DontRetry> =>
  Effect.withFiber((fiber) => {
    config.meters.giveUps[reason].updateUnsafe(1, fiber.context)
    eventsOf(fiber)?.publishUnsafe({
      _tag: "GaveUp",
      policy: config.name,
      reason,
      attempts,
      error,
      at: nowOf(fiber)
    })
    // A span only on this path (no cost to calls that succeed or are retried): a trace shows
    // why the policy stopped, e.g. a retry the budget refused.
    return Effect.withSpan(
      Effect.fail(new Errors.DontRetry({ reason, attempts, cause: error })),
      "sluice.retry.give_up",
      {
        captureStackTrace: false,
        attributes: {
          "sluice.retry.reason": reason,
          "sluice.retry.attempts": attempts,
          ...(config.name !== undefined ? { "sluice.retry.policy": config.name } : {})
        }
      }
    )
  })

/** The time the schedule asks the next try to start at, or `undefined` when it is done. */
const scheduledAt = <E, R>(
  step: (now: number, input: unknown) => Pull.Pull<[unknown, Duration.Duration], E, unknown, R>,
  now: number,
  error: unknown
): Effect.Effect<number | undefined, E, R> =>
  Pull.catchDone(
    Effect.map(step(now, error), ([, delay]) => now + Duration.toMillis(delay)),
    () => Effect.undefined
  )

/** Whether a try reached what it guards: set when the work behind the policy's gates starts. */
interface Sent {
  left: boolean
}

/**
 * The work of a retry, noting in `sent` when it starts: behind `gates` (the policy's `around`),
 * so a retry the throttle or limiter refused, or that was abandoned while it waited, is seen
 * never to have left.
 */
const marked = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  gates: (<A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, unknown, R>) | undefined,
  sent: Sent
): Effect.Effect<A, unknown, R> => {
  const work = Effect.suspend(() => {
    sent.left = true
    return self
  })
  return gates === undefined ? work : gates(work)
}

const retryLoop = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  firstError: E,
  config: Compiled,
  budget: RB.Budget | undefined,
  gates?: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, unknown, R>
): Effect.Effect<A, unknown, R> => {
  const first = Policy.verdict(firstError, 1, config)
  if (first !== "retry")
    return first === "pass" ? Effect.fail(firstError) : giveUp(first, 1, firstError, config)
  const { meters, schedule } = config
  return Effect.withFiber((fiber) => {
    const sink = eventsOf(fiber)
    const deadline = fiber.getRef(currentDeadline)
    const context = fiber.context
    return Effect.gen(function* () {
      // A fresh step per run of the policy: the schedule's state lives in it.
      const step = yield* Schedule.toStep(schedule)
      let error: unknown = firstError
      let attempts = 1
      while (true) {
        if (attempts > 1) {
          const verdict = Policy.verdict(error, attempts, config)
          if (verdict === "pass") return yield* Effect.fail(error)
          if (verdict !== "retry") return yield* giveUp(verdict, attempts, error, config)
        }
        const now = yield* Clock.currentTimeMillis
        const delay = Policy.nextDelay(
          now,
          yield* scheduledAt(step, now, error),
          backoff.hintMillis(error, config.maxRetryAfterMillis),
          deadline
        )
        if (typeof delay === "string") return yield* giveUp(delay, attempts, error, config)
        if (budget !== undefined) {
          const granted = budget.tryWithdrawUnsafe(now)
          ;(granted ? meters.withdrawals : meters.denials).updateUnsafe(1, context)
          if (!granted) return yield* giveUp("budget", attempts, error, config)
        }
        // The retry is paid for now, so that retries waiting in backoff count, and given back if
        // it never leaves: refused by this process (its gates, or a local refusal from inside a
        // composition the policy cannot see) or abandoned before it was sent. The budget bounds
        // the load retries add to the backend; that one added none.
        const sent: Sent = { left: false }
        const refund = (failure: unknown): void => {
          if (budget === undefined) return
          if (sent.left && (gates !== undefined || Outcome.ofError(failure) !== "refused")) return
          budget.refundUnsafe(now, nowOf(fiber))
          meters.refunds.updateUnsafe(1, context)
        }
        meters.retries.updateUnsafe(1, context)
        const attemptNumber = attempts
        sink?.publishUnsafe({
          _tag: "RetryScheduled",
          policy: config.name,
          attempt: attemptNumber,
          delayMillis: delay,
          error,
          at: now
        })
        // A zero delay must not become a timer (the live clock's setTimeout takes at least 1 ms);
        // yielding keeps an immediate retry loop fair to other fibers.
        const wait = delay > 0 ? Effect.sleep(Duration.millis(delay)) : Effect.yieldNow
        const result = yield* wait.pipe(
          Effect.andThen(
            Effect.suspend(() => {
              meters.attempts.updateUnsafe(1, context)
              return Effect.result(
                Effect.provideService(marked(self, gates, sent), currentAttempt, attemptNumber)
              )
            })
          ),
          Effect.onInterrupt(() => Effect.sync(() => refund(undefined))),
          // No stack capture: `new Error()` per retry dominated the cost of a retry storm.
          Effect.withSpan(
            "sluice.retry.attempt",
            {
              attributes: {
                "sluice.retry.attempt": attemptNumber,
                "sluice.retry.delay_ms": delay,
                ...(config.name !== undefined ? { "sluice.retry.policy": config.name } : {})
              }
            },
            { captureStackTrace: false }
          )
        )
        attempts++
        if (Result.isSuccess(result)) return result.success
        error = result.failure
        refund(error)
      }
    })
  })
}

const run = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  config: Compiled,
  budget: RB.Budget | undefined
): Effect.Effect<A, unknown, R> => {
  // One primitive for the whole first try: the attempt is usually already 0 (no enclosing
  // retry), so providing it is skipped; the budget reads the clock once, synchronously.
  const start = Effect.withFiber<A, E, R>((fiber) => {
    budget?.recordRequestUnsafe(nowOf(fiber))
    config.meters.attempts.updateUnsafe(1, fiber.context)
    return fiber.getRef(currentAttempt) === 0 ? self : Effect.provideService(self, currentAttempt, 0)
  })
  return Effect.catch(start, (error) => retryLoop(self, error, config, budget))
}

/** @internal (typed by the public module) */
export const withRetry = ((...args: ReadonlyArray<unknown>) => {
  const dataFirst = Effect.isEffect(args[0])
  const compiled = compile((dataFirst ? args[1] : args[0]) as R.PolicyOptions | undefined)
  const withPolicy = (self: Effect.Effect<unknown, unknown, unknown>) =>
    Result.isFailure(compiled) ? Effect.fail(compiled.failure) : apply(self, compiled.success)
  return dataFirst ? withPolicy(args[0] as Effect.Effect<unknown, unknown, unknown>) : withPolicy
}) as unknown as typeof R.withRetry

/**
 * The first try of a policy's `around`: its bookkeeping (budget request, attempt count) as a
 * gate, so it shares the one step of `Admission.guard`, and what the guard admits: the work
 * at attempt 0, also inside another policy's retry. What it reads from the fiber's context
 * (the attempt) is read again only when the context changes (a context is immutable); the
 * attempt counter is bound to that context (`Meters.bind`) once the same context comes back
 * (a context made per call never pays for one).
 */
class FirstTry implements Admission.Gate<true, never> {
  private context: Context.Context<never> | undefined = undefined
  private attempts: Meters.Bound<number> | undefined = undefined
  private atZero = true
  constructor(
    private readonly config: Compiled,
    private readonly budget: RB.Budget | undefined
  ) {}
  private read(context: Context.Context<never>): boolean {
    if (context === this.context) return true
    this.context = context
    this.attempts = undefined
    this.atZero = Context.get(context, currentAttempt) === 0
    return false
  }
  readonly tryEnter = (entry: Admission.Entry): true => {
    this.budget?.recordRequestUnsafe(entry.now)
    const context = entry.context
    if (this.read(context)) (this.attempts ??= Meters.bind(this.config.meters.attempts, context)).update(1)
    else this.config.meters.attempts.updateUnsafe(1, context)
    return true
  }
  readonly enter = (): Effect.Effect<true> => Effect.succeed(true)
  readonly settle = (): void => {}
  readonly admit: Admission.Admit = (self, entry) => {
    this.read(entry.context)
    return this.atZero ? self : Effect.provideService(self, currentAttempt, 0)
  }
}

const policyOf = (options: R.MakeOptions | undefined): Result.Result<R.Policy, Options.InvalidOptions> =>
  Result.flatMap(compile(options), (config) =>
    typeof config.budget === "string"
      ? Result.fail(
          invalid(
            "budget",
            "Retry.make needs a RetryBudget.Budget handle (look it up with RetryBudget.forKey)"
          )
        )
      : Result.succeed(policy(config, config.budget))
  )

/** @internal */
export const make = (options?: R.MakeOptions): Effect.Effect<R.Policy, Options.InvalidOptions> =>
  Effect.suspend(() => Effect.fromResult(policyOf(options)))

/** @internal */
export const makeUnsafe = (options?: R.MakeOptions): R.Policy =>
  Result.getOrThrowWith(policyOf(options), identity)

const policy = (config: Compiled, budget: RB.Budget | undefined): R.Policy => {
  return {
    maxAttempts: config.maxAttempts,
    budget,
    // The error type the kernel's verdicts guarantee (see `Retry.PolicyError`).
    apply: <A, E, R>(self: Effect.Effect<A, E, R>) =>
      run(self, config, budget) as Effect.Effect<A, R.PolicyError<E>, R>,
    around: (gates) => {
      const firstTry = new FirstTry(config, budget)
      const later = Admission.guard(gates)
      // The first try, the throttle, the limiter … in one step; a failure continues in
      // the retry loop from the guard's own handler. Inside another retry layer (the
      // fiber's attempt is not 0) the first try runs as the whole policy runs it, with the
      // attempt set back to 0 for its own tries: the guard admits it so.
      return Admission.guard(
        [firstTry, ...gates],
        (error, self) => retryLoop(self, error, config, budget, later),
        firstTry.admit
      ) as <A, E, R>(
        self: Effect.Effect<A, E, R>
      ) => Effect.Effect<A, R.PolicyError<E | Admission.RefusalOf<(typeof gates)[number]>>, R>
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

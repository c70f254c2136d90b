/**
 * The retry policy: retries at exactly one layer.
 *
 * `Retry.withRetry` retries the retryable failures of the effect it wraps (by default
 * `Errors.isRetryable`: `Overloaded`, `QuotaExceeded` within `maxRetryAfter`,
 * `Cause.TimeoutError`, errors marked with `Errors.markRetryable`) with a backoff
 * `Schedule`, at most `maxAttempts` times in all (first try included), within an
 * optional per-client `RetryBudget`. When attempts or budget run out, the last error
 * comes out wrapped in `DontRetry { reason, attempts, cause }`, and **the output error
 * type no longer contains the retryable errors**: `Errors.NonRetryable<E> |
 * Errors.DontRetry`. A policy one layer up therefore cannot retry them again; in a
 * three-layer stack the bottom is tried 3 times, not 27.
 *
 * Rules, in order, for a failure `e`:
 * 1. `DontRetry`, `Throttled`, `CircuitOpen` pass through untouched (never retried,
 *    whatever the predicate says).
 * 2. `QuotaExceeded` whose `retryAfter` exceeds `maxRetryAfter` becomes
 *    `DontRetry { reason: "not-retryable" }`: the quota resets later than we wait.
 * 3. If the predicate (`isRetryable`, default `Errors.isRetryable`) accepts `e`, it is
 *    retried while attempts, schedule and budget allow; then `DontRetry { reason:
 *    "attempts" | "budget" }`. A retry whose wait would end at or after the caller's
 *    deadline ({@link currentDeadline}) is not scheduled and spends no budget:
 *    `DontRetry { reason: "timeout" }`.
 * 4. Otherwise a member of `Errors.Retryable` (which the output type removed) becomes
 *    `DontRetry { reason: "not-retryable" }`; anything else passes through untouched.
 *
 * An error the predicate adds (say, a transport error) stays in the output type:
 * it passes through when it is not retried and becomes `DontRetry` once retries
 * are spent, so the type is a safe over-approximation. Mark such errors with
 * `Errors.markRetryable` to have the type remove them as well.
 *
 * The wait before a retry is the schedule's delay, or the error's `retryAfter` hint
 * when longer (clamped to `maxRetryAfter`, see `Backoff.clampRetryAfter`). Defects
 * and interruptions are never retried.
 *
 * **Details**
 *
 * - The attempt number ({@link currentAttempt}) and the caller's deadline
 *   ({@link currentDeadline}) are `Context.Reference`s: read them with `yield*`, set
 *   them with `Effect.provideService`; forked fibers inherit them.
 * - Each run of a policy steps its own copy of the schedule (`Schedule.toStep`), so a
 *   schedule value is shared safely by every policy and every call.
 * - Cost: on success the first try runs the wrapped effect as it is (the attempt is
 *   already 0 outside another policy), bumps one counter and, with a budget, records
 *   the request with one clock read. Schedules, spans and the loop are entered only
 *   after a failure.
 *
 * **Gotchas**
 *
 * - `maxAttempts` counts tries, the first included; `Schedule.upTo({ times })` and
 *   Effect's `retry({ times })` count retries.
 * - The wait is the longer of the schedule's delay and the error's `retryAfter` hint,
 *   so a hint never shortens a backoff, and a schedule need not honour hints itself.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { Errors } from "@sluice/core"
 * import { Retry } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * declare const inner: Effect.Effect<string, Errors.Overloaded>
 *
 * // The inner policy retries; the outer one only sees DontRetry, and cannot retry it.
 * const twoLayers = inner.pipe(Retry.withRetry({ maxAttempts: 3 }), Retry.withRetry({ maxAttempts: 3 }))
 * ```
 *
 * @since 0.1.0
 */
import type { Admission, Errors, Options } from "@sluice/core"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Metric from "effect/Metric"
import type * as Schedule from "effect/Schedule"
import type * as Stream from "effect/Stream"
import * as internal from "./internal/retry.js"
import type * as RetryBudget from "./RetryBudget.js"

/**
 * The attempt number of the current try, 0 for the first, readable inside the
 * retried effect (the HTTP client sends it as `x-sluice-attempt`). Set by the
 * innermost enclosing policy. A `Context.Reference` (default 0): `yield*` it, or
 * `fiber.getRef(Retry.currentAttempt)` where a fiber is at hand.
 *
 * @example
 * ```ts
 * import { Retry } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * const call = Effect.gen(function* () {
 *   const attempt = yield* Retry.currentAttempt
 *   return attempt === 0 ? "first try" : `retry ${attempt}`
 * })
 * Effect.runPromise(call).then(console.log) // prints: first try
 * ```
 * @since 0.1.0
 * @category getters
 */
export const currentAttempt: Context.Reference<number> = internal.currentAttempt

/**
 * The Clock time (epoch milliseconds) by which the caller needs the work done;
 * `Infinity` (the default) when it set none; a `Context.Reference`, set with
 * `Effect.provideService`. A policy reads it before each retry: a
 * retry that could not start before it would be cut off unsent, so it is not
 * scheduled, withdraws nothing from the budget, and the policy gives up with
 * `DontRetry { reason: "timeout" }`. Setting it bounds nothing by itself: whoever
 * sets it also ends the work then (`SluiceHttpClient`'s `timeout` sets both).
 *
 * @example
 * ```ts
 * // snippet: compile-only — takes seconds of real time
 * import { Errors } from "@sluice/core"
 * import { Retry } from "@sluice/retry"
 * import { Clock, Effect } from "effect"
 *
 * const call = Effect.fail(new Errors.Overloaded({ reason: "busy" }))
 * // Retries fit in the 2 seconds left; past them the policy gives up with "timeout".
 * const bounded = Effect.flatMap(Clock.currentTimeMillis, (now) =>
 *   call.pipe(
 *     Retry.withRetry({ maxAttempts: 5 }),
 *     Effect.provideService(Retry.currentDeadline, now + 2_000),
 *     Effect.timeout("2 seconds")
 *   )
 * )
 * ```
 * @since 0.2.0
 * @category getters
 */
export const currentDeadline: Context.Reference<number> = internal.currentDeadline

/**
 * Reads {@link currentAttempt}.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Retry } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * const call = Effect.flatMap(Retry.attempt, (n) => Effect.log(`attempt ${n}`))
 * const retried = call.pipe(Retry.withRetry({ maxAttempts: 3 }))
 * ```
 * @since 0.1.0
 * @category utils
 */
export const attempt: Effect.Effect<number> = internal.attempt

/**
 * Options of {@link withRetry}.
 *
 * - `maxAttempts`: attempts in all, first try included (positive integer, default 3).
 * - `schedule`: the backoff between attempts, fed the failing error (default
 *   `Backoff.defaultSchedule`); a schedule that stops also ends the retries
 *   (`DontRetry { reason: "attempts" }`).
 * - `budget`: a `RetryBudget.Budget` handle (fast: look it up once with
 *   `RetryBudget.forKey`), or a client key, which then requires `RetryBudget` in context.
 * - `isRetryable`: which failures to retry (default `Errors.isRetryable`).
 * - `maxRetryAfter`: the longest server hint honoured (default 30 s); longer or
 *   malformed hints are clamped to it, and a `QuotaExceeded` asking for more is not retried.
 * - `name`: tags metrics (`policy`) and spans.
 *
 * Bad values are an `InvalidOptions` naming the field: a typed failure of
 * {@link withRetry} and {@link make} ({@link makeUnsafe} throws it).
 *
 * @since 0.1.0
 * @category models
 */
export interface PolicyOptions {
  readonly maxAttempts?: number | undefined
  readonly schedule?: Schedule.Schedule<unknown, any> | undefined
  readonly budget?: RetryBudget.Budget | string | undefined
  readonly isRetryable?: ((error: unknown) => boolean) | undefined
  readonly maxRetryAfter?: Duration.Input | undefined
  readonly name?: string | undefined
}

/**
 * The error type of a policy over an effect failing with `E`: the retryable members
 * are gone, `DontRetry` is added.
 *
 * @example
 * ```ts
 * // snippet: compile-only — a type, checked by the compiler only
 * import type { Errors } from "@sluice/core"
 * import type { Retry } from "@sluice/retry"
 *
 * // Errors.Throttled | Errors.DontRetry
 * type E = Retry.PolicyError<Errors.Overloaded | Errors.Throttled>
 * ```
 * @since 0.1.0
 * @category errors
 */
export type PolicyError<E> = Errors.NonRetryable<E> | Errors.DontRetry

/**
 * What a policy needs from context: `RetryBudget` only when its budget is named by key.
 *
 * @since 0.1.0
 * @category models
 */
export type PolicyContext<O> = O extends { readonly budget?: infer B }
  ? [Extract<B, string>] extends [never]
    ? never
    : RetryBudget.RetryBudget
  : never

/**
 * Runs an effect under a retry policy. Data-first (`Retry.withRetry(effect, options)`)
 * or data-last (`effect.pipe(Retry.withRetry(options))`: build it once and reuse it).
 * Never throws: invalid options (including a `Backoff` schedule built from invalid
 * options) make the returned effect fail with `InvalidOptions` before the first try.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { Errors } from "@sluice/core"
 * import { Backoff, Retry } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * declare const call: Effect.Effect<string, Errors.Overloaded | Errors.Throttled>
 *
 * const withRetries = Retry.withRetry({
 *   maxAttempts: 3,
 *   schedule: Backoff.exponential({ base: "100 millis", max: "2 seconds" }).pipe(Backoff.jitter("full"))
 * })
 * // Effect<string, Errors.Throttled | Errors.DontRetry | Options.InvalidOptions>
 * const retried = withRetries(call)
 * ```
 * @since 0.2.0
 * @category combinators
 */
export const withRetry: {
  <const O extends PolicyOptions = {}>(
    options?: O
  ): <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, PolicyError<E> | Options.InvalidOptions, R | PolicyContext<O>>
  <A, E, R, const O extends PolicyOptions = {}>(
    self: Effect.Effect<A, E, R>,
    options?: O
  ): Effect.Effect<A, PolicyError<E> | Options.InvalidOptions, R | PolicyContext<O>>
} = internal.withRetry

/**
 * A retry event, beside the {@link metrics}: `RetryScheduled` when a policy schedules
 * a retry (`attempt`: the number of the try about to run, 1 for the first retry;
 * `delayMillis`: the wait before it; `error`: the failure retried), `GaveUp` when it
 * turns a failure into `DontRetry` (`reason`, `attempts` made, `error`). `policy` is
 * the policy's `name`; `at` epoch millis from Effect's `Clock`. Published only on the
 * failure path, to the {@link RetryEvents} service when the policy's effect runs with
 * one in its context (nothing is required otherwise).
 *
 * @since 0.2.0
 * @category models
 */
export type Event = RetryScheduled | GaveUp

/**
 * @since 0.2.0
 * @category models
 */
export interface RetryScheduled {
  readonly _tag: "RetryScheduled"
  readonly policy: string | undefined
  readonly attempt: number
  readonly delayMillis: number
  readonly error: unknown
  readonly at: number
}

/**
 * @since 0.2.0
 * @category models
 */
export interface GaveUp {
  readonly _tag: "GaveUp"
  readonly policy: string | undefined
  readonly reason: Errors.DontRetryReason
  readonly attempts: number
  readonly error: unknown
  readonly at: number
}

/**
 * The events service: a bounded `PubSub.sliding` (a subscriber that falls behind
 * loses the oldest events). `events` yields the events from the moment it is run.
 *
 * @since 0.2.0
 * @category models
 */
export interface EventsService {
  readonly events: Stream.Stream<Event>
  readonly publishUnsafe: (event: Event) => void
}

/**
 * The tag of the retry events service. Retry policies look it up on their failure
 * path; provide it (with {@link layerEvents}) around the effects whose retries you
 * want to observe, and subscribe with {@link events}.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { Retry } from "@sluice/retry"
 * import { Effect, Stream } from "effect"
 *
 * declare const call: Effect.Effect<string, Error>
 * const program = Effect.gen(function* () {
 *   yield* Retry.events.pipe(
 *     Stream.runForEach((event) => Effect.log(event._tag, event.policy)),
 *     Effect.forkScoped
 *   )
 *   return yield* call.pipe(Retry.withRetry({ name: "backend", maxAttempts: 3 }))
 * }).pipe(Effect.scoped, Effect.provide(Retry.layerEvents()))
 * ```
 * @since 0.2.0
 * @category tags
 */
export class RetryEvents extends Context.Service<RetryEvents, EventsService>()("@sluice/retry/RetryEvents") {}

/**
 * A Layer providing {@link RetryEvents}, keeping at most `capacity` (default 256)
 * events per subscriber.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerEvents: (capacity?: number) => Layer.Layer<RetryEvents> = internal.layerEvents

/**
 * The retry events of the {@link RetryEvents} service in context.
 *
 * @since 0.2.0
 * @category combinators
 */
export const events: Stream.Stream<Event, never, RetryEvents> = internal.events

/**
 * The policies' metrics, all with the attribute `policy` when the policy has a `name`:
 * `sluice_retry_attempts` (every try, first included), `sluice_retry_retries`
 * (retries scheduled) and `sluice_retry_give_ups` (attribute `reason`). Budget grants
 * and denials are `RetryBudget.metrics`. A policy builds one counter per attribute set
 * when it is made and updates it in the fiber's context: the fiber's
 * `Metric.MetricRegistry` holds the series, and attributes provided as
 * `Metric.CurrentMetricAttributes` are added to the policy's own.
 *
 * Spans: every retry runs in `sluice.retry.attempt` (attributes `sluice.retry.attempt`,
 * `sluice.retry.delay_ms`), and a give-up fails in `sluice.retry.give_up` (attributes
 * `sluice.retry.reason`, `sluice.retry.attempts`), both with `sluice.retry.policy` when
 * the policy has a name; a first try that succeeds opens no span.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads a metric, shown for its attribute names
 * import { Retry } from "@sluice/retry"
 * import { Metric } from "effect"
 *
 * const gaveUp = Metric.value(Metric.withAttributes(Retry.metrics.giveUps, { policy: "api", reason: "budget" }))
 * ```
 * @since 0.1.0
 * @category metrics
 */
export const metrics: {
  readonly attempts: Metric.Counter<number>
  readonly retries: Metric.Counter<number>
  readonly giveUps: Metric.Counter<number>
} = {
  attempts: internal.attempts.metric,
  retries: internal.retries.metric,
  giveUps: internal.giveUps.metric
}

/**
 * Options of {@link make}: those of {@link withRetry}, with the budget as a handle.
 *
 * @since 0.1.0
 * @category models
 */
export interface MakeOptions extends Omit<PolicyOptions, "budget"> {
  readonly budget?: RetryBudget.Budget | undefined
}

/**
 * A retry policy built once. `apply(self)` is exactly `Retry.withRetry(options)(self)`.
 * `around(gates)` runs every attempt of `self` through admission gates
 * (`Admission.guard`): the first try's bookkeeping (budget request, attempt count)
 * is itself a gate, so the first try takes one step through all of them; each
 * retry goes through the gates again. It behaves as
 * `apply(Admission.guard(gates)(self))`, inside another retry layer too (its tries
 * then count from attempt 0 again). This is how `@sluice/http` composes a request:
 * `policy.around([throttle.gate(host), limiters.gate(host)])`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Policy {
  readonly maxAttempts: number
  readonly budget: RetryBudget.Budget | undefined
  readonly apply: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, PolicyError<E>, R>
  readonly around: <const Gates extends ReadonlyArray<Admission.Gate<any, any>>>(
    gates: Gates
  ) => <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, PolicyError<E | Admission.RefusalOf<Gates[number]>>, R>
}

/**
 * Builds a {@link Policy}, failing with `InvalidOptions` naming the field on bad options.
 *
 * @example
 * ```ts
 * import { Retry, RetryBudget } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const budget = yield* RetryBudget.forKey("backend-a")
 *   const retry = yield* Retry.make({ maxAttempts: 3, budget })
 *   return yield* retry.apply(Effect.succeed(1)) // same as Retry.withRetry({ maxAttempts: 3, budget })
 * })
 * Effect.runPromise(program.pipe(Effect.provide(RetryBudget.layer()))).then(console.log) // prints: 1
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options?: MakeOptions) => Effect.Effect<Policy, Options.InvalidOptions> = internal.make

/**
 * Builds a {@link Policy} synchronously; **throws** `InvalidOptions` naming the field
 * on bad options.
 *
 * @since 0.2.0
 * @category constructors
 */
export const makeUnsafe: (options?: MakeOptions) => Policy = internal.makeUnsafe

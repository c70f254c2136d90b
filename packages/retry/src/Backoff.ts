/**
 * Retry delays as Effect `Schedule`s: exponential growth with a cap, full / equal /
 * decorrelated jitter, and a combinator that lets a server's `retryAfter` hint win
 * when it asks for a longer wait than the computed delay.
 *
 * **Details**
 *
 * - Every schedule here is an ordinary `Schedule`, built with `Schedule.fromStep`: each
 *   step answers the delay before the next try, and outputs it. It composes with
 *   Effect's own combinators (`Schedule.upTo`, `Schedule.max`, `Schedule.while`, …) and
 *   works with `Effect.retry` as well as with `Retry.withRetry`.
 * - A schedule's state (the retry count, the previous decorrelated delay) lives in the
 *   step function `Schedule.toStep` makes, so every run starts afresh and one schedule
 *   value can be shared by any number of policies.
 * - Jitter draws from Effect's `Random` service, so `Random.withSeed(seed)` makes a run
 *   reproducible.
 * - The delays are the kernel's (`@sluice/kernel/retry/Backoff`); this module only
 *   steps them.
 *
 * **Gotchas**
 *
 * - Constructors never throw. Invalid options (a negative delay, a factor below 1, a
 *   maximum below the base) give a schedule that carries the `InvalidOptions` naming
 *   the field: `Retry.withRetry` and `Retry.make` report it as a typed failure before
 *   the first try; stepped by anything else (`Effect.retry`), the schedule dies with
 *   it. Check a schedule built from untrusted input with {@link validate}.
 * - {@link jitter} and {@link honorRetryAfter} keep such a schedule as it is, so the
 *   error survives them; Effect's own combinators wrap it and lose it (the wrapped
 *   schedule still dies when stepped).
 * - The exponential and decorrelated schedules recur forever: bound them with
 *   `Retry.withRetry`'s `maxAttempts`, or with `Schedule.upTo({ times })` under
 *   `Effect.retry`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { Errors } from "@sluice/core"
 * import { Backoff } from "@sluice/retry"
 * import { Effect, Schedule } from "effect"
 *
 * declare const call: Effect.Effect<string, Errors.Overloaded>
 *
 * // 100 ms, 200 ms, 400 ms … at most 2 s, jittered, waiting longer when the server asks
 * const schedule = Backoff.exponential({ base: "100 millis", max: "2 seconds" }).pipe(
 *   Backoff.jitter("full"),
 *   Backoff.honorRetryAfter({ maxWait: "10 seconds" })
 * )
 * const retried = Effect.retry(call, schedule.pipe(Schedule.upTo({ times: 2 })))
 * ```
 *
 * @since 0.1.0
 */
import type { Options } from "@sluice/core"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Schedule from "effect/Schedule"
import * as internal from "./internal/backoff.js"

/**
 * Exponential delays: `base × factor^n` for the n-th retry (n = 0 first), capped at
 * `max`. `factor` defaults to 2 and must be ≥ 1; `max` defaults to 30 seconds and must
 * not be below `base`. Recurs forever: cap the attempts with `Retry.withRetry`'s
 * `maxAttempts` or `Schedule.upTo({ times })`. Outputs the delay.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Backoff } from "@sluice/retry"
 *
 * // 100 ms, 200 ms, 400 ms, … at most 5 s
 * const schedule = Backoff.exponential({ base: "100 millis", factor: 2, max: "5 seconds" })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const exponential: (options: {
  readonly base: Duration.Input
  readonly factor?: number | undefined
  readonly max?: Duration.Input | undefined
}) => Schedule.Schedule<Duration.Duration> = internal.exponential

/**
 * A jitter mode: `"full"` draws each delay uniformly in `[0, d]`, `"equal"` in
 * `[d/2, d]` (d/2 plus uniform in `[0, d/2]`).
 *
 * @since 0.1.0
 * @category models
 */
export type JitterMode = "full" | "equal"

/**
 * Randomises the delays of any schedule (full or equal jitter) so that clients that
 * failed together do not retry together. Uses Effect's `Random`. (Effect's own
 * `Schedule.jittered` is fixed at 0.8–1.2× the delay: too narrow to spread a wave.)
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Backoff } from "@sluice/retry"
 *
 * const schedule = Backoff.exponential({ base: "50 millis" }).pipe(Backoff.jitter("full"))
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const jitter: {
  (
    mode: JitterMode
  ): <Out, In, E, R>(self: Schedule.Schedule<Out, In, E, R>) => Schedule.Schedule<Out, In, E, R>
  <Out, In, E, R>(self: Schedule.Schedule<Out, In, E, R>, mode: JitterMode): Schedule.Schedule<Out, In, E, R>
} = internal.jitter

/**
 * Full jitter: each delay uniform in `[0, d]`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const jitterFull = <Out, In, E, R>(
  self: Schedule.Schedule<Out, In, E, R>
): Schedule.Schedule<Out, In, E, R> => internal.jitter(self, "full")

/**
 * Equal jitter: each delay is `d/2` plus uniform in `[0, d/2]`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const jitterEqual = <Out, In, E, R>(
  self: Schedule.Schedule<Out, In, E, R>
): Schedule.Schedule<Out, In, E, R> => internal.jitter(self, "equal")

/**
 * Decorrelated jitter: each delay is uniform in `[base, 3 × previous]` (the first
 * previous being `base`), capped at `max` (default 30 s, not below `base`).
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Backoff } from "@sluice/retry"
 *
 * const schedule = Backoff.decorrelated({ base: "100 millis", max: "10 seconds" })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const decorrelated: (options: {
  readonly base: Duration.Input
  readonly max?: Duration.Input | undefined
}) => Schedule.Schedule<Duration.Duration> = internal.decorrelated

/**
 * Lets a server hint win: when the schedule's input (the error being retried) carries
 * a `retryAfter` (a `Duration`, or a number of milliseconds) that is longer than the
 * computed delay, the schedule waits `retryAfter` instead. The hint is clamped with
 * {@link clampRetryAfter} to `maxWait` (default 30 s). The schedule's output and its
 * decision to stop are unchanged. Put it last (after {@link jitter}), or the hint is
 * jittered too.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { Backoff } from "@sluice/retry"
 * import { Effect, Schedule } from "effect"
 *
 * declare const call: Effect.Effect<string, Error>
 * const schedule = Backoff.exponential({ base: "100 millis" }).pipe(
 *   Backoff.honorRetryAfter({ maxWait: "10 seconds" }),
 *   Schedule.upTo({ times: 2 })
 * )
 * const retried = Effect.retry(call, schedule)
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const honorRetryAfter: {
  (options?: {
    readonly maxWait?: Duration.Input | undefined
  }): <Out, In, E, R>(self: Schedule.Schedule<Out, In, E, R>) => Schedule.Schedule<Out, In, E, R>
  <Out, In, E, R>(
    self: Schedule.Schedule<Out, In, E, R>,
    options?: { readonly maxWait?: Duration.Input | undefined }
  ): Schedule.Schedule<Out, In, E, R>
} = internal.honorRetryAfter

/**
 * Clamps a `retryAfter` hint to `[0, maxWait]`. A hint that is negative, `NaN`,
 * infinite or longer than `maxWait` (a server asking for years) becomes `maxWait`:
 * a malformed hint is treated as "wait as long as you are willing to", never thrown.
 * A number is read as milliseconds; a negative `Duration` (Effect 4 keeps the sign:
 * `Duration.millis(-5)` is −5 ms) is malformed like a negative number.
 *
 * @example
 * ```ts
 * import { Backoff } from "@sluice/retry"
 * import { Duration } from "effect"
 *
 * console.log(String(Backoff.clampRetryAfter(Duration.days(365), "30 seconds"))) // prints: 30000 millis
 * console.log(String(Backoff.clampRetryAfter(-5, "30 seconds"))) // prints: 30000 millis
 * console.log(String(Backoff.clampRetryAfter(1500, "30 seconds"))) // prints: 1500 millis
 * ```
 * @since 0.1.0
 * @category utils
 */
export const clampRetryAfter: (
  hint: Duration.Duration | number,
  maxWait: Duration.Input
) => Duration.Duration = internal.clampRetryAfter

/**
 * The raw `retryAfter` hint an error carries, if any (`Overloaded`, `QuotaExceeded`,
 * `CircuitOpen`, or any object with a `retryAfter` Duration or millisecond number).
 *
 * @since 0.1.0
 * @category combinators
 */
export const retryAfterOf: (error: unknown) => Option.Option<Duration.Duration | number> =
  internal.retryAfterOf

/**
 * The schedule `Retry.withRetry` uses when none is given: exponential from 100 ms,
 * factor 2, capped at 5 s, with full jitter.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultSchedule: Schedule.Schedule<Duration.Duration> = internal.defaultSchedule

/**
 * Succeeds with the schedule, or fails with the `InvalidOptions` a Backoff
 * constructor in it was given (see the module notes).
 *
 * @example
 * ```ts
 * import { Backoff } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * const checked = Backoff.validate(Backoff.exponential({ base: "100 millis", factor: 0.5 })) // fails: factor
 * Effect.runPromise(Effect.flip(checked)).then((error) => console.log(error.message))
 * // prints: Backoff.exponential: invalid options
 * // prints: factor: expected a finite factor >= 1, got 0.5
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const validate = <Out, In, E, R>(
  schedule: Schedule.Schedule<Out, In, E, R>
): Effect.Effect<Schedule.Schedule<Out, In, E, R>, Options.InvalidOptions> => {
  const error = internal.invalidOptionsOf(schedule)
  return error === undefined ? Effect.succeed(schedule) : Effect.fail(error)
}

/**
 * Retry delays as Effect `Schedule`s: exponential growth with a cap, full / equal /
 * decorrelated jitter, and a combinator that lets a server's `retryAfter` hint win
 * when it asks for a longer wait than the computed delay.
 *
 * Every schedule here is an ordinary `Schedule`, so it composes with Effect's own
 * combinators (`Schedule.intersect`, `Schedule.upTo`, `Schedule.whileInput`, …) and
 * works with `Effect.retry` as well as with `Retry.withRetry`. Jitter draws from Effect's
 * `Random` service, so `Effect.withRandom(Random.make(seed))` makes a run reproducible.
 *
 * Constructors never throw. Invalid options (a negative delay, a factor below 1, a
 * maximum below the base) give a schedule that carries the `InvalidOptions` naming
 * the field: `Retry.withRetry` and `Retry.make` report it as a typed failure before
 * the first try; stepped by anything else (`Effect.retry`), the schedule dies with it.
 * Check a schedule built from untrusted input with {@link validate}.
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
 * `maxAttempts` or `Schedule.recurs`. Outputs the delay.
 *
 * @example
 * ```ts
 * import { Backoff } from "@sluice/retry"
 *
 * // 100 ms, 200 ms, 400 ms, … at most 5 s
 * const schedule = Backoff.exponential({ base: "100 millis", factor: 2, max: "5 seconds" })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const exponential: (options: {
  readonly base: Duration.DurationInput
  readonly factor?: number | undefined
  readonly max?: Duration.DurationInput | undefined
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
 * failed together do not retry together. Uses Effect's `Random`.
 *
 * @example
 * ```ts
 * import { Backoff } from "@sluice/retry"
 *
 * const schedule = Backoff.exponential({ base: "50 millis" }).pipe(Backoff.jitter("full"))
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const jitter: {
  (mode: JitterMode): <Out, In, R>(self: Schedule.Schedule<Out, In, R>) => Schedule.Schedule<Out, In, R>
  <Out, In, R>(self: Schedule.Schedule<Out, In, R>, mode: JitterMode): Schedule.Schedule<Out, In, R>
} = internal.jitter

/**
 * Full jitter: each delay uniform in `[0, d]`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const jitterFull = <Out, In, R>(self: Schedule.Schedule<Out, In, R>): Schedule.Schedule<Out, In, R> =>
  internal.jitter(self, "full")

/**
 * Equal jitter: each delay is `d/2` plus uniform in `[0, d/2]`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const jitterEqual = <Out, In, R>(self: Schedule.Schedule<Out, In, R>): Schedule.Schedule<Out, In, R> =>
  internal.jitter(self, "equal")

/**
 * Decorrelated jitter: each delay is uniform in `[base, 3 × previous]` (the first
 * previous being `base`), capped at `max` (default 30 s, not below `base`).
 *
 * @example
 * ```ts
 * import { Backoff } from "@sluice/retry"
 *
 * const schedule = Backoff.decorrelated({ base: "100 millis", max: "10 seconds" })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const decorrelated: (options: {
  readonly base: Duration.DurationInput
  readonly max?: Duration.DurationInput | undefined
}) => Schedule.Schedule<Duration.Duration> = internal.decorrelated

/**
 * Lets a server hint win: when the schedule's input (the error being retried) carries
 * a `retryAfter` (a `Duration`, or a number of milliseconds) that is longer than the
 * computed delay, the schedule waits `retryAfter` instead. The hint is clamped with
 * {@link clampRetryAfter} to `maxWait` (default 30 s). The schedule's output and its
 * decision to stop are unchanged.
 *
 * @example
 * ```ts
 * import { Backoff } from "@sluice/retry"
 * import { Effect, Schedule } from "effect"
 *
 * declare const call: Effect.Effect<string, Error>
 * const schedule = Backoff.exponential({ base: "100 millis" }).pipe(
 *   Backoff.honorRetryAfter({ maxWait: "10 seconds" }),
 *   Schedule.intersect(Schedule.recurs(2))
 * )
 * const retried = Effect.retry(call, schedule)
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const honorRetryAfter: {
  (options?: {
    readonly maxWait?: Duration.DurationInput | undefined
  }): <Out, In, R>(self: Schedule.Schedule<Out, In, R>) => Schedule.Schedule<Out, In, R>
  <Out, In, R>(
    self: Schedule.Schedule<Out, In, R>,
    options?: { readonly maxWait?: Duration.DurationInput | undefined }
  ): Schedule.Schedule<Out, In, R>
} = internal.honorRetryAfter as any

/**
 * Clamps a `retryAfter` hint to `[0, maxWait]`. A hint that is negative, `NaN`,
 * infinite or longer than `maxWait` (a server asking for years) becomes `maxWait`:
 * a malformed hint is treated as "wait as long as you are willing to", never thrown.
 * A number is read as milliseconds. (A `Duration` built from a negative number is
 * already zero in Effect, so it means "no extra wait".)
 *
 * @example
 * ```ts
 * import { Backoff } from "@sluice/retry"
 * import { Duration } from "effect"
 *
 * Backoff.clampRetryAfter(Duration.days(365), "30 seconds") // 30 seconds
 * Backoff.clampRetryAfter(-5, "30 seconds") // 30 seconds
 * Backoff.clampRetryAfter(1500, "30 seconds") // 1.5 seconds
 * ```
 * @since 0.1.0
 * @category utils
 */
export const clampRetryAfter: (
  hint: Duration.Duration | number,
  maxWait: Duration.DurationInput
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
 *
 * const checked = Backoff.validate(Backoff.exponential({ base: "100 millis", factor: 0.5 })) // fails: factor
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const validate = <Out, In, R>(
  schedule: Schedule.Schedule<Out, In, R>
): Effect.Effect<Schedule.Schedule<Out, In, R>, Options.InvalidOptions> => {
  const error = internal.invalidOptionsOf(schedule)
  return error === undefined ? Effect.succeed(schedule) : Effect.fail(error)
}

/**
 * Which status and headers a server answers an error with, from the error's plain fields
 * (`ErrorBody.Decoded`, durations in milliseconds). The body is the error itself
 * (`ErrorBody.encode`); the status and headers are what every client, Sluice's or not, reads
 * first:
 *
 * | error | status | headers |
 * |---|---|---|
 * | `QuotaExceeded` | `429` | `Retry-After`, `RateLimit-Policy`, `RateLimit` of its tier |
 * | `Overloaded`, `CircuitOpen` | `503` | `Retry-After` when the hint is positive |
 * | `Throttled` | `503` | the don't-retry flag: the caller refused itself, a retry changes nothing |
 * | `DontRetry` | its cause's | its cause's, and the don't-retry flag |
 *
 * A hint is written as whole seconds, at least 1: a `Retry-After: 0` would invite an
 * immediate retry. An infinite hint (a quota that never resets, a breaker isolated by hand)
 * has no date to give, so it says "don't retry" instead.
 *
 * @since 0.2.0
 */
import * as ErrorBody from "./ErrorBody.js"
import type * as Headers from "./Headers.js"
import * as RateLimit from "./RateLimit.js"
import * as RetryAfter from "./RetryAfter.js"

/**
 * The status and headers of an error response.
 *
 * @since 0.2.0
 */
export interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
}

/**
 * The status and headers `error` is answered with, under the header `names`.
 *
 * @since 0.2.0
 */
export const answer = (error: ErrorBody.Decoded, names: Headers.HeaderNames): Answer => {
  const headers: Record<string, string> = {}
  let status = 503
  // A lower layer already retried, or the caller refused itself: it must not retry.
  if (error._tag === "DontRetry" || error._tag === "Throttled") headers[names.dontRetry] = "1"
  // What a DontRetry gave up on keeps its status and its hint: a quota below stays a quota
  // (429, `Retry-After`, the RateLimit fields) one tier up, with "don't retry" beside it.
  const cause = error._tag === "DontRetry" ? error.cause : error
  if (cause?._tag === "QuotaExceeded") {
    status = 429
    // A 429 always names a wait, at least a second, even for a hint of 0, a negative or NaN
    // one (a clock that went back, a caller's own arithmetic): 0 would invite a retry at once.
    const millis = ErrorBody.hint(cause.retryAfterMs)
    if (millis === Infinity) headers[names.dontRetry] = "1"
    else headers[names.retryAfter] = RetryAfter.format(Math.max(millis, 1))
    const tier = { name: cause.tier, limit: cause.limit, remaining: cause.remaining }
    headers[names.rateLimitPolicy] = RateLimit.formatPolicy([tier])
    headers[names.rateLimit] = RateLimit.format([
      Number.isFinite(millis) ? { ...tier, resetMillis: millis } : tier
    ])
  } else if (cause?._tag === "Overloaded" || cause?._tag === "CircuitOpen") {
    const millis = ErrorBody.hint(cause.retryAfterMs ?? 0)
    if (millis === Infinity) headers[names.dontRetry] = "1"
    else if (millis > 0) headers[names.retryAfter] = RetryAfter.format(millis)
  }
  return { status, headers }
}

/**
 * Whether an error is answered as a plain retryable refusal (a `503`, its hint aside): an
 * `Overloaded` or a `CircuitOpen`. A server whose traffic is mostly retries makes these
 * terminal; a quota keeps its own answer, and `Throttled` and `DontRetry` already say "don't
 * retry".
 *
 * @since 0.2.0
 */
export const isRetryable503 = (tag: ErrorBody.Decoded["_tag"]): boolean =>
  tag === "Overloaded" || tag === "CircuitOpen"

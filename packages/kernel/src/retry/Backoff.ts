/**
 * Retry delays: capped exponential growth, full and equal jitter, decorrelated jitter,
 * and the precedence of a server's `Retry-After` hint over the computed delay. The
 * jitter variants are those of AWS's "Exponential Backoff And Jitter" (Marc Brooker):
 * clients that failed together must not retry together, or every retry wave is a new
 * spike. A hint wins only when it asks for a longer wait, and a malformed or absurd
 * hint (negative, `NaN`, infinite, years) means "wait as long as you are willing to":
 * waiting less than a confused server asked for is the riskier mistake.
 *
 * Delays are milliseconds; randomness is a `() => number` in [0, 1) (or one draw of
 * it), so the same draws give the same delays.
 *
 * @since 0.2.0
 */
import type { Issue } from "../options/Field.js"
import * as Field from "../options/Field.js"

/**
 * The options of an exponential backoff, their ranges and defaults: a positive `base` delay, a
 * finite growth `factor` of at least 1 (default 2), and a finite cap `max` (default 30 seconds).
 *
 * @since 0.2.0
 */
export const exponentialOptions = {
  base: Field.duration(Field.required<number>(Field.positiveDuration)),
  factor: Field.withDefault(
    Field.expecting((n) => Number.isFinite(n) && n >= 1, "a finite factor >= 1"),
    2
  ),
  max: Field.duration(Field.withDefault(Field.finiteDuration, 30_000))
}

/**
 * The options of a decorrelated-jitter backoff: a positive `base` delay and a finite cap `max`
 * (default 30 seconds).
 *
 * @since 0.2.0
 */
export const decorrelatedOptions = {
  base: exponentialOptions.base,
  max: exponentialOptions.max
}

/**
 * The options of honoring `Retry-After`: the longest hint taken as it is, `maxWait` (finite,
 * default 30 seconds).
 *
 * @since 0.2.0
 */
export const honorOptions = {
  maxWait: Field.duration(Field.withDefault(Field.finiteDuration, 30_000))
}

/**
 * The issue of a cap below the base delay (the first delay would already break the cap).
 *
 * @since 0.2.0
 */
export const capIssue = (baseMillis: number, maxMillis: number): Issue | undefined =>
  maxMillis < baseMillis
    ? { path: ["max"], message: "the maximum delay must not be below the base delay" }
    : undefined

/**
 * The default retry delays: exponential from a `base` of 100 ms, doubling, at most 5 seconds
 * (`max`), with full jitter ({@link defaultJitter}).
 *
 * @since 0.2.0
 */
export const defaultExponential = { base: 100, factor: 2, max: 5_000 } as const

/**
 * The jitter of the default retry delays: full.
 *
 * @since 0.2.0
 */
export const defaultJitter: JitterMode = "full"

/**
 * The n-th exponential delay (n = 0 first): `base × factor^n`, at most `max`. Stays
 * finite however large n is (`factor^n` overflows to `Infinity`, the cap holds).
 *
 * @since 0.2.0
 */
export const exponential = (baseMillis: number, factor: number, maxMillis: number, n: number): number =>
  Math.min(maxMillis, baseMillis * Math.pow(factor, n))

/**
 * A jitter mode: `"full"` draws a delay `d` uniformly in `[0, d]`, `"equal"` in
 * `[d/2, d]`.
 *
 * @since 0.2.0
 */
export type JitterMode = "full" | "equal"

/**
 * Jitters a delay with one draw `r` in [0, 1): `d × r` (full) or `d/2 + d/2 × r` (equal).
 *
 * @since 0.2.0
 */
export const jitter = (mode: JitterMode, delayMillis: number, r: number): number =>
  mode === "full" ? delayMillis * r : delayMillis / 2 + (delayMillis / 2) * r

/**
 * The next decorrelated-jitter delay from the previous one (the first previous being
 * `base`) and one draw `r` in [0, 1): uniform in `[base, 3 × previous]`, at most `max`.
 *
 * @since 0.2.0
 */
export const decorrelated = (
  baseMillis: number,
  maxMillis: number,
  previousMillis: number,
  r: number
): number => {
  const upper = Math.max(baseMillis, previousMillis * 3)
  return Math.min(maxMillis, baseMillis + (upper - baseMillis) * r)
}

/**
 * Whether a `Retry-After` hint is taken as it is: a finite, non-negative number of
 * milliseconds no longer than `maxWait`.
 *
 * @since 0.2.0
 */
export const isUsableRetryAfter = (hintMillis: number, maxWaitMillis: number): boolean =>
  Number.isFinite(hintMillis) && hintMillis >= 0 && hintMillis <= maxWaitMillis

/**
 * A `Retry-After` hint clamped to `[0, maxWait]`: a malformed hint (negative, `NaN`,
 * infinite) or one beyond the cap is `maxWait`.
 *
 * @since 0.2.0
 */
export const clampRetryAfter = (hintMillis: number, maxWaitMillis: number): number =>
  isUsableRetryAfter(hintMillis, maxWaitMillis) ? hintMillis : maxWaitMillis

/**
 * The delay to wait when a schedule computed `computed` and the server hinted `hint`
 * (already clamped; 0 without a hint): the hint when it is longer, else the computed
 * delay.
 *
 * @since 0.2.0
 */
export const honorRetryAfter = (computedMillis: number, hintMillis: number): number =>
  hintMillis <= computedMillis ? computedMillis : hintMillis

/**
 * The `Retry-After` hint a failure carries, as it is (`undefined` without one): its own
 * `retryAfter`, or, for a `DontRetry`, that of its `cause`: a lower layer that gave up keeps its
 * cause, and with it the last hint.
 *
 * @since 0.2.0
 */
export const retryAfterOf = (error: unknown): unknown => {
  if (typeof error !== "object" || error === null) return undefined
  const failure = error as {
    readonly _tag?: unknown
    readonly cause?: unknown
    readonly retryAfter?: unknown
  }
  return failure._tag === "DontRetry" && "cause" in failure ? retryAfterOf(failure.cause) : failure.retryAfter
}

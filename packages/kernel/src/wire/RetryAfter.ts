/**
 * The `Retry-After` response header (RFC 9110 §10.2.3): `HTTP-date / delay-seconds`,
 * where delay-seconds is `1*DIGIT` (no sign, no fraction). A server's hint is read
 * as a delay in milliseconds clamped to `[0, max]`: a date in the past means "now",
 * and a hint of years (a confused or hostile server) is no longer than the reader is
 * willing to wait. Written, a delay is whole seconds rounded up, at most a day:
 * delay-seconds cannot say "never" (the don't-retry flag says that).
 *
 * @since 0.2.0
 */
import * as HttpDate from "./HttpDate.js"

/**
 * The longest `Retry-After` taken literally by default: one day, in milliseconds.
 *
 * @since 0.2.0
 */
export const DEFAULT_MAX_MILLIS = 24 * 60 * 60 * 1000

/**
 * The largest delay-seconds written: one day.
 *
 * @since 0.2.0
 */
export const MAX_SECONDS = 24 * 60 * 60

const MAX_HEADER_LENGTH = 256
const DELAY_SECONDS = /^\d+$/

/**
 * Parses a `Retry-After` value into milliseconds, clamped to `[0, maxMillis]`;
 * `undefined` when absent or malformed. An HTTP date is read relative to `nowMillis`
 * (epoch milliseconds; see `HttpDate.parse` for two-digit years).
 *
 * @since 0.2.0
 */
export const parseMillis = (
  value: string | null | undefined,
  nowMillis: number,
  maxMillis: number = DEFAULT_MAX_MILLIS
): number | undefined => {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_HEADER_LENGTH) return undefined
  // Field values arrive without leading/trailing whitespace (OWS); trim in case a caller did not.
  const trimmed = value.trim()
  if (DELAY_SECONDS.test(trimmed)) {
    const seconds = Number(trimmed)
    if (!Number.isFinite(seconds)) return maxMillis
    const millis = seconds * 1000
    return millis > maxMillis ? maxMillis : millis
  }
  if (!Number.isFinite(nowMillis)) return undefined
  const at = HttpDate.parse(trimmed, nowMillis)
  if (at === undefined) return undefined
  const delta = at - nowMillis
  if (delta <= 0) return 0
  return delta > maxMillis ? maxMillis : delta
}

/**
 * Formats a delay in milliseconds as delay-seconds, rounded up (a positive delay is
 * at least `"1"`); zero, negative or `NaN` is `"0"`, and an infinite delay or one
 * longer than a day is `"86400"`.
 *
 * @since 0.2.0
 */
export const format = (millis: number): string => {
  if (Number.isNaN(millis) || millis <= 0) return "0"
  if (millis >= MAX_SECONDS * 1000) return String(MAX_SECONDS)
  // a denormal delay divides to 0: a positive one is still at least a second
  return String(Math.max(1, Math.ceil(millis / 1000)))
}

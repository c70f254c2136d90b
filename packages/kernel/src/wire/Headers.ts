/**
 * The request and response headers of Sluice's wire protocol and the parsers of their
 * values: the caller's criticality and attempt number, and the server's throttle
 * (back-pressure) and don't-retry flags. A header value comes from a peer that may be
 * buggy or hostile, so every parser here is total: a malformed value is ignored or
 * clamped, never thrown, and never lets a caller claim more than the protocol allows
 * (an attempt number is capped, a flag is only its few spellings).
 *
 * @since 0.2.0
 */

/**
 * The header names the protocol uses, lower case (Node and most platforms lower-case
 * incoming header names).
 *
 * @since 0.2.0
 */
export interface HeaderNames {
  readonly criticality: string
  readonly attempt: string
  /** the time left of the caller's deadline, in milliseconds (`deadline/Propagation`) */
  readonly deadline: string
  readonly throttle: string
  readonly dontRetry: string
  /** a cheaper answer served under overload (a cached copy, a partial result) */
  readonly degraded: string
  readonly retryAfter: string
  readonly rateLimitPolicy: string
  readonly rateLimit: string
}

/**
 * The default header names: `x-sluice-criticality`, `x-sluice-attempt`,
 * `x-sluice-deadline-ms`, `x-sluice-throttle`, `x-sluice-dont-retry`, `x-sluice-degraded`, and the standard `retry-after`,
 * `ratelimit-policy`, `ratelimit`.
 *
 * @since 0.2.0
 */
export const defaultHeaderNames: HeaderNames = {
  criticality: "x-sluice-criticality",
  attempt: "x-sluice-attempt",
  deadline: "x-sluice-deadline-ms",
  throttle: "x-sluice-throttle",
  dontRetry: "x-sluice-dont-retry",
  degraded: "x-sluice-degraded",
  retryAfter: "retry-after",
  rateLimitPolicy: "ratelimit-policy",
  rateLimit: "ratelimit"
}

/**
 * The largest attempt number believed by default: a caller cannot make one request
 * count as more retries than this.
 *
 * @since 0.2.0
 */
export const MAX_ATTEMPT = 1000

/**
 * One header value from a headers record: the value, or the first of a repeated
 * header's values; `undefined` for anything else.
 *
 * @since 0.2.0
 */
export const headerValue = (value: string | ReadonlyArray<string> | null | undefined): string | undefined => {
  if (typeof value === "string") return value
  if (Array.isArray(value) && typeof value[0] === "string") return value[0]
  return undefined
}

/**
 * Parses an attempt header (tries before this one): digits only, surrounding
 * whitespace allowed; anything else (a sign, a fraction, an exponent, more than 16
 * characters) is 0, anything above `max` (or too large to be exact) is `max`.
 *
 * @since 0.2.0
 */
export const parseAttempt = (value: string | null | undefined, max: number = MAX_ATTEMPT): number => {
  if (typeof value !== "string" || value.length === 0 || value.length > 16) return 0
  const trimmed = value.trim()
  if (!/^\d+$/.test(trimmed)) return 0
  const n = Number(trimmed)
  if (!Number.isSafeInteger(n)) return max
  return n > max ? max : n
}

/**
 * Parses a boolean flag header: `1`, `true` or `yes` (any case, surrounding
 * whitespace allowed) is `true`; anything else is `false`.
 *
 * @since 0.2.0
 */
export const parseFlag = (value: string | null | undefined): boolean => {
  if (typeof value !== "string" || value.length === 0 || value.length > 8) return false
  const v = value.trim().toLowerCase()
  return v === "1" || v === "true" || v === "yes"
}

/**
 * What a response's status and headers say, read by a client: a refusal (which one, with
 * which hint) or none, and whether the server asked it to slow down. The status and
 * headers decide what an error is; the body (`ErrorBody`) can only give back what they
 * cannot hold. The rules:
 *
 * | response | verdict |
 * |---|---|
 * | `429` + `Retry-After` / `RateLimit-Policy` / `RateLimit` | `QuotaExceeded` with the hint, tier, limit, remaining |
 * | a retryable status (`408`, `502`, `503`, `504` by default) (+ `Retry-After`) | `Overloaded` (`"server"` for a 503, else `"status N"`) |
 * | either of those, or any 5xx, + the don't-retry flag | `DontRetry { reason: "server" }` wrapping it |
 * | the throttle flag | `throttled`, whatever the status |
 * | anything else | no error |
 *
 * A quota refusal without any hint still carries one (a second, at most the reader's
 * maximum): it must not be retried at once. Errors are `ErrorBody.Decoded` values, plain
 * data a binding turns into its own error types.
 *
 * The body then fills in what the status and headers cannot hold ({@link withBody}): a Sluice
 * server's body gives the error it failed with, seen from the caller; a foreign body gives the
 * server's own words as the `Overloaded` reason.
 *
 * @since 0.2.0
 */
import * as ErrorBody from "./ErrorBody.js"
import * as Headers from "./Headers.js"
import * as RateLimit from "./RateLimit.js"
import * as RetryAfter from "./RetryAfter.js"

/**
 * The part of a response a verdict reads: its status and lower-case headers.
 *
 * @since 0.2.0
 */
export interface ResponseLike {
  readonly status: number
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
}

/**
 * The refusals a response's status and headers decode to.
 *
 * @since 0.2.0
 */
export type DecodeError = Extract<
  ErrorBody.Decoded,
  { readonly _tag: "Overloaded" | "QuotaExceeded" | "DontRetry" }
>

/**
 * A verdict: the refusal, if any, and the throttle flag.
 *
 * @since 0.2.0
 */
export interface Verdict {
  readonly error: DecodeError | undefined
  readonly throttled: boolean
}

/**
 * The statuses read as a retryable overload by default: `408`, `502`, `503`, `504`.
 *
 * @since 0.2.0
 */
export const DEFAULT_RETRYABLE_STATUSES: ReadonlyArray<number> = [408, 502, 503, 504]

const defaultRetryable: ReadonlySet<number> = new Set(DEFAULT_RETRYABLE_STATUSES)

/**
 * A reader's longest `Retry-After`: the given milliseconds, or the default day when
 * they are infinite, negative or `NaN`.
 *
 * @since 0.2.0
 */
export const maxRetryAfterMillis = (millis: number): number =>
  Number.isFinite(millis) && millis >= 0 ? millis : RetryAfter.DEFAULT_MAX_MILLIS

const finite = (n: number | undefined, fallback: number): number =>
  n !== undefined && Number.isFinite(n) && n >= 0 ? n : fallback

/**
 * The quota refusal a `429` describes: the tier named by the first exhausted `RateLimit`
 * item (else the first item, else the first policy, else `"server"`), its policy's quota,
 * and the hint from `Retry-After`, else the item's reset, else one second; every hint at
 * most `maxMillis`.
 *
 * @since 0.2.0
 */
export const quotaExceeded = (
  response: ResponseLike,
  nowMillis: number,
  names: Headers.HeaderNames,
  maxMillis: number
): Extract<ErrorBody.Decoded, { readonly _tag: "QuotaExceeded" }> => {
  const items = RateLimit.parse(Headers.headerValue(response.headers[names.rateLimit]))
  const policies = RateLimit.parse(Headers.headerValue(response.headers[names.rateLimitPolicy]))
  const item = items.find((i) => i.params.r === 0) ?? items[0]
  const name = item?.name ?? policies[0]?.name ?? "server"
  const policy = policies.find((p) => p.name === name)
  let retryAfter = RetryAfter.parseMillis(
    Headers.headerValue(response.headers[names.retryAfter]),
    nowMillis,
    maxMillis
  )
  if (retryAfter === undefined && item?.params.t !== undefined)
    retryAfter = Math.min(item.params.t * 1000, maxMillis)
  return {
    _tag: "QuotaExceeded",
    tier: name.length > 0 ? name : "server",
    limit: finite(policy?.params.q, 0),
    remaining: finite(item?.params.r, 0),
    // Without any hint a quota refusal still must not be retried at once.
    retryAfterMs: retryAfter ?? Math.min(1000, maxMillis)
  }
}

const terminal = (cause: Exclude<ErrorBody.DecodedCause, { readonly _tag: "Throttled" | "CircuitOpen" }>) =>
  ({ _tag: "DontRetry", reason: "server", cause }) as const

/**
 * Reads the verdict from status and headers only. `nowMillis` (epoch milliseconds)
 * resolves an HTTP-date `Retry-After`; `maxRetryAfterMillis` bounds every hint (see
 * {@link maxRetryAfterMillis}).
 *
 * @since 0.2.0
 */
export const verdict = (
  response: ResponseLike,
  nowMillis: number,
  names: Headers.HeaderNames,
  maxRetryAfter: number,
  retryableStatuses: ReadonlySet<number> = defaultRetryable
): Verdict => {
  const headers = response.headers
  const throttled = Headers.parseFlag(Headers.headerValue(headers[names.throttle]))
  const status = response.status
  if (status < 400) return { error: undefined, throttled }
  const maxMillis = maxRetryAfterMillis(maxRetryAfter)
  const dontRetry = Headers.parseFlag(Headers.headerValue(headers[names.dontRetry]))
  if (status === 429) {
    const cause = quotaExceeded(response, nowMillis, names, maxMillis)
    return { error: dontRetry ? terminal(cause) : cause, throttled }
  }
  if (retryableStatuses.has(status)) {
    const retryAfterMs = RetryAfter.parseMillis(
      Headers.headerValue(headers[names.retryAfter]),
      nowMillis,
      maxMillis
    )
    const reason = status === 503 ? "server" : `status ${status}`
    const cause =
      retryAfterMs === undefined
        ? ({ _tag: "Overloaded", reason } as const)
        : ({ _tag: "Overloaded", reason, retryAfterMs } as const)
    return { error: dontRetry ? terminal(cause) : cause, throttled }
  }
  if (dontRetry && status >= 500) {
    return { error: terminal({ _tag: "Overloaded", reason: `status ${status}` }), throttled }
  }
  return { error: undefined, throttled }
}

const MAX_REASON = 200

/**
 * The server's own words for a refusal, from a body that is not Sluice's encoding: a JSON
 * `reason`, `message` or `error` string, else the text itself, trimmed, at most 200
 * characters (an ellipsis marks a cut); `undefined` for an empty body.
 *
 * @since 0.2.0
 */
export const foreignReason = (body: string): string | undefined => {
  let text = body.trim()
  if (text.length === 0) return undefined
  if (text.startsWith("{")) {
    try {
      const parsed: unknown = JSON.parse(text)
      if (typeof parsed === "object" && parsed !== null) {
        for (const field of ["reason", "message", "error"]) {
          const value = (parsed as Record<string, unknown>)[field]
          if (typeof value === "string" && value.trim().length > 0) {
            text = value.trim()
            break
          }
        }
      }
    } catch {
      // not JSON after all: keep the text
    }
  }
  return text.length > MAX_REASON ? `${text.slice(0, MAX_REASON)}…` : text
}

/**
 * Whether a parsed JSON body of a successful response asks to slow down: an object whose
 * `attribute` is `true` (a route that cannot set headers may say it there).
 *
 * @since 0.2.0
 */
export const bodyThrottle = (body: unknown, attribute: string): boolean =>
  typeof body === "object" &&
  body !== null &&
  !Array.isArray(body) &&
  (body as Record<string, unknown>)[attribute] === true

/**
 * The object a server's JSON body text holds, with the throttle `attribute` set to `true`
 * (what {@link bodyThrottle} reads); `undefined` when the text is not a JSON object, which is
 * then sent as it is.
 *
 * @since 0.2.0
 */
export const markBodyThrottle = (text: string, attribute: string): Record<string, unknown> | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined
  const body = parsed as Record<string, unknown>
  body[attribute] = true
  return body
}

/**
 * Whether a response of this status and `content-type` may carry the throttle attribute in
 * a JSON body: a 2xx whose type mentions JSON.
 *
 * @since 0.2.0
 */
export const mayCarryBodyThrottle = (response: ResponseLike): boolean => {
  if (response.status < 200 || response.status >= 300) return false
  const type = Headers.headerValue(response.headers["content-type"])
  return type !== undefined && type.toLowerCase().includes("json")
}

/**
 * The verdict's error with a foreign server's reason in it: an `Overloaded` (alone or in a
 * `DontRetry`) takes the reason (after its `status N`, if any); a quota keeps its fields. The
 * same error when there is no reason or nothing takes it.
 *
 * @since 0.2.0
 */
export const withReason = (error: DecodeError, reason: string | undefined): DecodeError => {
  if (reason === undefined) return error
  if (error._tag === "Overloaded") {
    const base = error.reason === "server" ? "" : `${error.reason}: `
    return error.retryAfterMs === undefined
      ? { _tag: "Overloaded", reason: `${base}${reason}` }
      : { _tag: "Overloaded", reason: `${base}${reason}`, retryAfterMs: error.retryAfterMs }
  }
  if (error._tag === "DontRetry" && error.cause?._tag === "Overloaded") {
    return {
      _tag: "DontRetry",
      reason: error.reason,
      cause: withReason(error.cause, reason) as ErrorBody.DecodedCause,
      ...(error.attempts !== undefined ? { attempts: error.attempts } : {})
    }
  }
  return error
}

type Inner = Extract<ErrorBody.Decoded, { readonly _tag: "Overloaded" | "QuotaExceeded" }>

const atMost = (millis: number, max: number): number => (millis > max ? max : millis)

/**
 * A Sluice error read from a body, as the caller sees it: a refusal of the server's, its hint
 * no longer than `maxMillis`. Refusals that only mean something where they were decided (the
 * server's own throttle or breaker) are, to the caller, the server refusing the work: an
 * `Overloaded` that names them and keeps the hint.
 */
const innerOf = (error: ErrorBody.Decoded, maxMillis: number): Inner | undefined => {
  switch (error._tag) {
    case "Overloaded":
      return error.retryAfterMs === undefined
        ? { _tag: "Overloaded", reason: error.reason }
        : { _tag: "Overloaded", reason: error.reason, retryAfterMs: atMost(error.retryAfterMs, maxMillis) }
    case "QuotaExceeded":
      return { ...error, retryAfterMs: atMost(error.retryAfterMs, maxMillis) }
    case "Throttled":
      return { _tag: "Overloaded", reason: `throttled: ${error.key}` }
    case "CircuitOpen": {
      const reason = `circuit open: ${error.name}`
      return Number.isFinite(error.retryAfterMs) && error.retryAfterMs > 0
        ? { _tag: "Overloaded", reason, retryAfterMs: atMost(error.retryAfterMs, maxMillis) }
        : { _tag: "Overloaded", reason }
    }
    case "DontRetry":
      return error.cause === undefined ? undefined : innerOf(error.cause, maxMillis)
  }
}

/**
 * The verdict's error with what a Sluice server's body says. The status and headers decide
 * what the error is (a 429 is a quota, the don't-retry flag is terminal); the body gives back
 * what they cannot hold: the reason as the server wrote it, the hint in milliseconds, the
 * quota's fields, and why and after how many attempts a tier below gave up. A body that
 * disagrees with the status fills in only what agrees (a quota on a 503 changes nothing; a
 * `DontRetry` without the flag gives only its cause).
 */
const fromSluiceBody = (error: DecodeError, body: ErrorBody.Decoded, maxMillis: number): DecodeError => {
  const target = error._tag === "DontRetry" ? error.cause : error
  const inner = innerOf(body, maxMillis)
  let refined = target
  if (inner !== undefined && target !== undefined && inner._tag === target._tag) {
    // a hint only in the header (a proxy added it) is kept
    refined =
      inner._tag === "Overloaded" &&
      inner.retryAfterMs === undefined &&
      target._tag === "Overloaded" &&
      target.retryAfterMs !== undefined
        ? { _tag: "Overloaded", reason: inner.reason, retryAfterMs: target.retryAfterMs }
        : inner
  }
  if (error._tag !== "DontRetry") return (refined as Inner | undefined) ?? error
  const gaveUp = body._tag === "DontRetry" ? body : undefined
  return {
    _tag: "DontRetry",
    reason: gaveUp?.reason ?? error.reason,
    ...(gaveUp?.attempts !== undefined ? { attempts: gaveUp.attempts } : {}),
    ...(refined !== undefined ? { cause: refined } : {})
  }
}

/**
 * The verdict's error with what the error body says: Sluice's own encoding (`ErrorBody`)
 * read as the error the server failed with, seen from the caller (hints at most
 * `maxRetryAfter`, see {@link maxRetryAfterMillis}), or a foreign server's words
 * ({@link foreignReason}, {@link withReason}). The same error when the body adds nothing.
 *
 * @since 0.2.0
 */
export const withBody = (error: DecodeError, body: string, maxRetryAfter: number): DecodeError => {
  const sluice = ErrorBody.parse(body)
  return sluice !== undefined
    ? fromSluiceBody(error, sluice, maxRetryAfterMillis(maxRetryAfter))
    : withReason(error, foreignReason(body))
}

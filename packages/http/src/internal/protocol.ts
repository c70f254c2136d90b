import { Errors } from "@sluice/core"
import * as errorBody from "@sluice/kernel/wire/ErrorBody"
import * as RateLimit from "@sluice/kernel/wire/RateLimit"
import * as RetryAfter from "@sluice/kernel/wire/RetryAfter"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as HttpClientError from "effect/http/HttpClientError"
import * as Option from "effect/Option"
import type { RateLimitTier } from "../Protocol.js"

/** @internal */
export const parseRetryAfter = (
  value: string | null | undefined,
  nowMillis: number,
  max?: Duration.Input
): Option.Option<Duration.Duration> => {
  const maxMillis = max === undefined ? RetryAfter.DEFAULT_MAX_MILLIS : Duration.toMillis(max)
  const millis = RetryAfter.parseMillis(value, nowMillis, maxMillis)
  return millis === undefined ? Option.none() : Option.some(Duration.millis(millis))
}

/** @internal */
export const formatRetryAfter = (duration: Duration.Input): string =>
  RetryAfter.format(Duration.toMillis(duration))

const toKernelTier = (t: RateLimitTier): RateLimit.Tier => ({
  name: t.name,
  limit: t.limit,
  remaining: t.remaining,
  windowMillis: t.window === undefined ? undefined : Duration.toMillis(t.window),
  resetMillis: t.reset === undefined ? undefined : Duration.toMillis(t.reset)
})

/** @internal */
export const formatRateLimitPolicy = (tiers: ReadonlyArray<RateLimitTier>): string =>
  RateLimit.formatPolicy(tiers.map(toKernelTier))

/** @internal */
export const formatRateLimit = (tiers: ReadonlyArray<RateLimitTier>): string =>
  RateLimit.format(tiers.map(toKernelTier))

// ---- error bodies ------------------------------------------------------------------

const dontRetryReasons: ReadonlySet<string> = new Set(Errors.DontRetryReason.literals)

const isSluiceCause = (
  u: unknown
): u is Errors.Overloaded | Errors.QuotaExceeded | Errors.Throttled | Errors.CircuitOpen =>
  u instanceof Errors.Overloaded ||
  u instanceof Errors.QuotaExceeded ||
  u instanceof Errors.Throttled ||
  u instanceof Errors.CircuitOpen

/** @internal */
export const isSluiceError = (u: unknown): u is Errors.SluiceError =>
  isSluiceCause(u) || u instanceof Errors.DontRetry

const causeToDecoded = (
  e: Errors.Overloaded | Errors.QuotaExceeded | Errors.Throttled | Errors.CircuitOpen
): errorBody.DecodedCause => {
  switch (e._tag) {
    case "Overloaded":
      return e.retryAfter === undefined
        ? { _tag: "Overloaded", reason: e.reason }
        : { _tag: "Overloaded", reason: e.reason, retryAfterMs: Duration.toMillis(e.retryAfter) }
    case "QuotaExceeded":
      // `client` stays here: the caller knows who it is, and the id a tier is known by at the
      // tier below (its API key, say) must not reach the tiers above it.
      return {
        _tag: "QuotaExceeded",
        tier: e.tier,
        limit: e.limit,
        remaining: e.remaining,
        retryAfterMs: Duration.toMillis(e.retryAfter)
      }
    case "Throttled":
      return e.probability === undefined
        ? { _tag: "Throttled", key: e.key }
        : { _tag: "Throttled", key: e.key, probability: e.probability }
    case "CircuitOpen":
      return {
        _tag: "CircuitOpen",
        name: e.name,
        halfOpenAt: e.halfOpenAt,
        retryAfterMs: Duration.toMillis(e.retryAfter)
      }
  }
}

const requestReasons: ReadonlySet<string> = new Set(["TransportError", "EncodeError", "InvalidUrlError"])

/**
 * The name a cause that is not Sluice's goes by on the wire. Effect 4 renamed the errors a
 * client gives up on: `TimeoutException` is `TimeoutError`, and a request or response failure
 * is one `HttpClientError` whose `reason` says which. The names of the Effect 3 line are sent
 * (`TimeoutException`, `RequestError`, `ResponseError`), so a body reads the same whichever line
 * wrote it.
 */
const wireCause = (cause: unknown): unknown => {
  if (Cause.isTimeoutError(cause)) return { _tag: "TimeoutException" }
  if (HttpClientError.isHttpClientError(cause))
    return { _tag: requestReasons.has(cause.reason._tag) ? "RequestError" : "ResponseError" }
  return cause
}

/**
 * What a `DontRetry` gave up on, as the body says it. A Sluice error is kept whole (a nested
 * `DontRetry` stands for its own cause); anything else is named by its tag only
 * (`ErrorBody.foreignCause`).
 */
const dontRetryCause = (cause: unknown): errorBody.DecodedCause | undefined => {
  let current = cause
  for (let depth = 0; depth < 4 && current instanceof Errors.DontRetry; depth++) current = current.cause
  if (current === undefined || current instanceof Errors.DontRetry) return undefined
  return isSluiceCause(current) ? causeToDecoded(current) : errorBody.foreignCause(wireCause(current))
}

/** @internal */
export const toDecoded = (error: Errors.SluiceError): errorBody.Decoded => {
  if (error._tag !== "DontRetry") return causeToDecoded(error)
  const cause = dontRetryCause(error.cause)
  return {
    _tag: "DontRetry",
    reason: error.reason,
    ...(error.attempts !== undefined ? { attempts: error.attempts } : {}),
    ...(cause !== undefined ? { cause } : {})
  }
}

const causeFromDecoded = (
  d: errorBody.DecodedCause
): Errors.Overloaded | Errors.QuotaExceeded | Errors.Throttled | Errors.CircuitOpen => {
  switch (d._tag) {
    case "Overloaded":
      return new Errors.Overloaded(
        d.retryAfterMs === undefined
          ? { reason: d.reason }
          : { reason: d.reason, retryAfter: Duration.millis(d.retryAfterMs) }
      )
    case "QuotaExceeded":
      return new Errors.QuotaExceeded({
        tier: d.tier,
        limit: d.limit,
        remaining: d.remaining,
        retryAfter: Duration.millis(d.retryAfterMs)
      })
    case "Throttled":
      return new Errors.Throttled(
        d.probability === undefined ? { key: d.key } : { key: d.key, probability: d.probability }
      )
    case "CircuitOpen":
      return new Errors.CircuitOpen({
        name: d.name,
        halfOpenAt: d.halfOpenAt,
        retryAfter: Duration.millis(d.retryAfterMs)
      })
  }
}

/** @internal */
export const fromDecoded = (d: errorBody.Decoded): Errors.SluiceError => {
  if (d._tag !== "DontRetry") return causeFromDecoded(d)
  return new Errors.DontRetry({
    // a reason this version does not know still means "don't retry": the server said so
    reason: dontRetryReasons.has(d.reason) ? (d.reason as Errors.DontRetryReason) : "server",
    ...(d.attempts !== undefined ? { attempts: d.attempts } : {}),
    ...(d.cause !== undefined ? { cause: causeFromDecoded(d.cause) } : {})
  })
}

/** @internal */
export const formatErrorBody = (error: Errors.SluiceError): errorBody.ErrorBody =>
  errorBody.encode(toDecoded(error))

/** @internal */
export const parseErrorBody = (body: unknown): Option.Option<Errors.SluiceError> => {
  const decoded = typeof body === "string" ? errorBody.parse(body) : errorBody.decode(body)
  return decoded === undefined ? Option.none() : Option.some(fromDecoded(decoded))
}

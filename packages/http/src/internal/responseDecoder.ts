import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { Errors } from "@sluice/core"
import * as Wire from "@sluice/kernel/wire/Verdict"
import type { WireProtocolSettings } from "../Protocol.js"
import * as protocol from "./protocol.js"

/** @internal */
export type DecodeError = Errors.Overloaded | Errors.QuotaExceeded | Errors.DontRetry

/** @internal */
export interface ResponseLike {
  readonly status: number
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
}

/** @internal */
export interface Verdict {
  readonly error: DecodeError | undefined
  readonly throttled: boolean
}

const maxMillisOf = (settings: WireProtocolSettings): number =>
  Wire.maxRetryAfterMillis(Duration.toMillis(settings.maxRetryAfter))

/** @internal */
export const DEFAULT_RETRYABLE_STATUSES: ReadonlyArray<number> = Wire.DEFAULT_RETRYABLE_STATUSES

/** @internal */
export const verdict = (
  response: ResponseLike,
  nowMillis: number,
  settings: WireProtocolSettings,
  retryableStatuses?: ReadonlySet<number>
): Verdict => {
  const v = Wire.verdict(
    response,
    nowMillis,
    settings.headers,
    Duration.toMillis(settings.maxRetryAfter),
    retryableStatuses
  )
  return {
    error: v.error === undefined ? undefined : (protocol.fromDecoded(v.error) as DecodeError),
    throttled: v.throttled
  }
}

/**
 * The server's own words for a refusal, from a foreign error body.
 *
 * @internal
 */
export const reasonOf: (body: string) => string | undefined = Wire.foreignReason

/** The verdict's error with a foreign server's reason in it (a 429 keeps its quota fields). @internal */
export const withReason = (error: DecodeError, reason: string | undefined): DecodeError => {
  if (reason === undefined) return error
  if (error._tag === "Overloaded") {
    const base = error.reason === "server" ? "" : `${error.reason}: `
    return new Errors.Overloaded({
      reason: `${base}${reason}`,
      ...(error.retryAfter !== undefined ? { retryAfter: error.retryAfter } : {})
    })
  }
  if (
    error._tag === "DontRetry" &&
    error.cause !== undefined &&
    (error.cause as { _tag?: unknown })._tag === "Overloaded"
  ) {
    return new Errors.DontRetry({
      reason: error.reason,
      cause: withReason(error.cause as Errors.Overloaded, reason) as Errors.Overloaded,
      ...(error.attempts !== undefined ? { attempts: error.attempts } : {})
    })
  }
  return error
}

const clampMillis = (
  retryAfter: Duration.Duration | undefined,
  maxMillis: number
): Duration.Duration | undefined => {
  if (retryAfter === undefined) return undefined
  const millis = Duration.toMillis(retryAfter)
  return millis > maxMillis ? Duration.millis(maxMillis) : retryAfter
}

type Inner = Errors.Overloaded | Errors.QuotaExceeded

/**
 * A Sluice error read from a body, as the caller sees it: a refusal of the server's (origin
 * remote, whatever it was there), its hint no longer than `maxRetryAfter`. Refusals that only
 * mean something where they were decided (the server's own throttle or breaker) are, to the
 * caller, the server refusing the work: an `Overloaded` that names them and keeps the hint.
 */
const innerOf = (error: Errors.SluiceError, maxMillis: number): Inner | undefined => {
  switch (error._tag) {
    case "Overloaded": {
      const retryAfter = clampMillis(error.retryAfter, maxMillis)
      return new Errors.Overloaded({
        reason: error.reason,
        ...(retryAfter !== undefined ? { retryAfter } : {})
      })
    }
    case "QuotaExceeded":
      return new Errors.QuotaExceeded({
        tier: error.tier,
        limit: error.limit,
        remaining: error.remaining,
        retryAfter: clampMillis(error.retryAfter, maxMillis)!
      })
    case "Throttled":
      return new Errors.Overloaded({ reason: `throttled: ${error.key}` })
    case "CircuitOpen": {
      const millis = Duration.toMillis(error.retryAfter)
      const reason = `circuit open: ${error.name}`
      return Number.isFinite(millis) && millis > 0
        ? new Errors.Overloaded({ reason, retryAfter: clampMillis(error.retryAfter, maxMillis)! })
        : new Errors.Overloaded({ reason })
    }
    case "DontRetry": {
      const cause = error.cause
      return cause !== undefined && (cause as { _tag?: unknown })._tag !== "DontRetry"
        ? innerOf(cause as Errors.SluiceError, maxMillis)
        : undefined
    }
  }
}

/**
 * The verdict's error with what a Sluice server's body says. The status and headers decide
 * what the error is (a 429 is a quota, `x-sluice-dont-retry` is terminal); the body gives back
 * what they cannot hold: the reason as the server wrote it, the hint in milliseconds, the
 * quota's fields, and why and after how many attempts a tier below gave up. A body that
 * disagrees with the status fills in only what agrees (a quota on a 503 changes nothing; a
 * `DontRetry` without the header gives only its cause).
 */
const fromSluiceBody = (error: DecodeError, body: Errors.SluiceError, maxMillis: number): DecodeError => {
  const target: Inner | undefined =
    error._tag === "DontRetry" ? (error.cause as Inner | undefined) : (error as Inner)
  const inner = innerOf(body, maxMillis)
  let refined: Inner | undefined = target
  if (inner !== undefined && target !== undefined && inner._tag === target._tag) {
    // a hint only in the header (a proxy added it) is kept
    refined =
      inner._tag === "Overloaded" && inner.retryAfter === undefined && target.retryAfter !== undefined
        ? new Errors.Overloaded({ reason: inner.reason, retryAfter: target.retryAfter })
        : inner
  }
  if (error._tag !== "DontRetry") return refined ?? error
  const gaveUp = body._tag === "DontRetry" ? body : undefined
  return new Errors.DontRetry({
    reason: gaveUp?.reason ?? error.reason,
    ...(gaveUp?.attempts !== undefined ? { attempts: gaveUp.attempts } : {}),
    ...(refined !== undefined ? { cause: refined } : {})
  })
}

/**
 * The verdict's error with what the error body says: Sluice's own encoding (see
 * `protocol.parseErrorBody`) decoded into the same typed error, or a foreign server's reason.
 *
 * @internal
 */
export const withBody = (error: DecodeError, body: string, settings: WireProtocolSettings): DecodeError => {
  const sluice = protocol.parseErrorBody(body)
  if (sluice._tag === "Some") return fromSluiceBody(error, sluice.value, maxMillisOf(settings))
  return withReason(error, reasonOf(body))
}

/** @internal */
export const jsonThrottle = (
  response: ResponseLike & { readonly json: Effect.Effect<unknown, unknown> },
  attribute: string
): Effect.Effect<boolean> =>
  Wire.mayCarryBodyThrottle(response)
    ? Effect.match(response.json, {
        onFailure: () => false,
        onSuccess: (body) => Wire.bodyThrottle(body, attribute)
      })
    : Effect.succeed(false)

/** @internal */
export type Decodable = ResponseLike & {
  readonly json: Effect.Effect<unknown, unknown>
  readonly text: Effect.Effect<string, unknown>
}

/** @internal */
export const decode = <Res extends Decodable>(
  response: Res,
  settings: WireProtocolSettings,
  json: boolean
): Effect.Effect<readonly [Res, boolean], DecodeError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const v = verdict(response, now, settings)
    const error = v.error
    if (error !== undefined) {
      return Effect.flatMap(
        Effect.orElseSucceed(response.text, () => ""),
        (body) => Effect.fail(withBody(error, body, settings))
      )
    }
    if (v.throttled || !json) return Effect.succeed([response, v.throttled] as const)
    return Effect.map(jsonThrottle(response, settings.throttleAttribute), (t) => [response, t] as const)
  })

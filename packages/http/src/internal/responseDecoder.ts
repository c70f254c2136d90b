import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { Errors } from "@sluice/core"
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

const finite = (n: number | undefined, fallback: number): number =>
  n !== undefined && Number.isFinite(n) && n >= 0 ? n : fallback

const maxMillisOf = (settings: WireProtocolSettings): number => {
  const millis = Duration.toMillis(settings.maxRetryAfter)
  return Number.isFinite(millis) && millis >= 0 ? millis : protocol.DEFAULT_MAX_RETRY_AFTER_MILLIS
}

/** @internal */
export const quotaExceeded = (
  response: ResponseLike,
  nowMillis: number,
  settings: WireProtocolSettings
): Errors.QuotaExceeded => {
  const names = settings.headers
  const maxMillis = maxMillisOf(settings)
  const items = protocol.parseRateLimitItems(protocol.headerValue(response.headers[names.rateLimit]))
  const policies = protocol.parseRateLimitItems(protocol.headerValue(response.headers[names.rateLimitPolicy]))
  const item = items.find((i) => i.params.r === 0) ?? items[0]
  const name = item?.name ?? policies[0]?.name ?? "server"
  const policy = policies.find((p) => p.name === name)
  let retryAfter = protocol.parseRetryAfterMillis(
    protocol.headerValue(response.headers[names.retryAfter]),
    nowMillis,
    maxMillis
  )
  if (retryAfter === undefined && item?.params.t !== undefined)
    retryAfter = Math.min(item.params.t * 1000, maxMillis)
  return new Errors.QuotaExceeded({
    tier: name.length > 0 ? name : "server",
    limit: finite(policy?.params.q, 0),
    remaining: finite(item?.params.r, 0),
    // Without any hint a quota refusal still must not be retried at once.
    retryAfter: Duration.millis(retryAfter ?? Math.min(1000, maxMillis))
  })
}

/** @internal */
export const DEFAULT_RETRYABLE_STATUSES: ReadonlyArray<number> = [408, 502, 503, 504]

const defaultRetryable: ReadonlySet<number> = new Set(DEFAULT_RETRYABLE_STATUSES)

/** @internal */
export const verdict = (
  response: ResponseLike,
  nowMillis: number,
  settings: WireProtocolSettings,
  retryableStatuses: ReadonlySet<number> = defaultRetryable
): Verdict => {
  const names = settings.headers
  const headers = response.headers
  const throttled = protocol.parseFlag(protocol.headerValue(headers[names.throttle]))
  const status = response.status
  if (status < 400) return { error: undefined, throttled }
  const dontRetry = protocol.parseFlag(protocol.headerValue(headers[names.dontRetry]))
  if (status === 429) {
    const cause = quotaExceeded(response, nowMillis, settings)
    return { error: dontRetry ? new Errors.DontRetry({ reason: "server", cause }) : cause, throttled }
  }
  if (retryableStatuses.has(status)) {
    const retryAfter = protocol.parseRetryAfterMillis(
      protocol.headerValue(headers[names.retryAfter]),
      nowMillis,
      maxMillisOf(settings)
    )
    const reason = status === 503 ? "server" : `status ${status}`
    const cause = new Errors.Overloaded(
      retryAfter === undefined ? { reason } : { reason, retryAfter: Duration.millis(retryAfter) }
    )
    return { error: dontRetry ? new Errors.DontRetry({ reason: "server", cause }) : cause, throttled }
  }
  if (dontRetry && status >= 500) {
    return {
      error: new Errors.DontRetry({
        reason: "server",
        cause: new Errors.Overloaded({ reason: `status ${status}` })
      }),
      throttled
    }
  }
  return { error: undefined, throttled }
}

const MAX_REASON = 200

/**
 * The server's own words for a refusal, from a foreign error body: a JSON `reason`,
 * `message` or `error` string, else the text itself, trimmed to 200 characters.
 *
 * @internal
 */
export const reasonOf = (body: string): string | undefined => {
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

const isJson = (response: ResponseLike): boolean => {
  const type = protocol.headerValue(response.headers["content-type"])
  return type !== undefined && type.toLowerCase().includes("json")
}

/** @internal */
export const jsonThrottle = (
  response: ResponseLike & { readonly json: Effect.Effect<unknown, unknown> },
  attribute: string
): Effect.Effect<boolean> =>
  response.status >= 200 && response.status < 300 && isJson(response)
    ? Effect.match(response.json, {
        onFailure: () => false,
        onSuccess: (body) =>
          typeof body === "object" &&
          body !== null &&
          !Array.isArray(body) &&
          (body as any)[attribute] === true
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

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
 * The server's own words for a refusal, from an error body: a JSON `reason`,
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

/** The verdict's error with the server's reason in it (a 429 keeps its quota fields). @internal */
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
export const decode = <Res extends ResponseLike & { readonly json: Effect.Effect<unknown, unknown> }>(
  response: Res,
  settings: WireProtocolSettings,
  json: boolean
): Effect.Effect<readonly [Res, boolean], DecodeError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const v = verdict(response, now, settings)
    if (v.error !== undefined) return Effect.fail(v.error)
    if (v.throttled || !json) return Effect.succeed([response, v.throttled] as const)
    return Effect.map(jsonThrottle(response, settings.throttleAttribute), (t) => [response, t] as const)
  })

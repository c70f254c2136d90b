import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { Criticality, Errors } from "@sluice/core"
import { WireProtocol, type WireProtocolSettings } from "../Protocol.js"
import * as protocol from "./protocol.js"

/** @internal */
export const isSluiceError = (u: unknown): u is Errors.SluiceError =>
  u instanceof Errors.Overloaded ||
  u instanceof Errors.QuotaExceeded ||
  u instanceof Errors.Throttled ||
  u instanceof Errors.CircuitOpen ||
  u instanceof Errors.DontRetry

const encodeError = Schema.encodeEither(Errors.SluiceError)

const body = (error: Errors.SluiceError): unknown =>
  Either.match(encodeError(error), {
    onLeft: () => ({ error: { _tag: error._tag } }),
    onRight: (encoded) => ({ error: encoded })
  })

/** @internal */
export const errorResponse = (
  error: Errors.SluiceError,
  settings: WireProtocolSettings
): HttpServerResponse.HttpServerResponse => {
  const names = settings.headers
  const headers: Record<string, string> = {}
  let status = 503
  switch (error._tag) {
    case "DontRetry":
    case "Throttled": {
      // A lower layer already retried, or we refused locally: the caller must not retry.
      headers[names.dontRetry] = "1"
      break
    }
    case "Overloaded": {
      if (error.retryAfter !== undefined)
        headers[names.retryAfter] = protocol.formatRetryAfter(error.retryAfter)
      break
    }
    case "CircuitOpen": {
      headers[names.retryAfter] = protocol.formatRetryAfter(error.retryAfter)
      break
    }
    case "QuotaExceeded": {
      status = 429
      headers[names.retryAfter] = protocol.formatRetryAfter(error.retryAfter)
      headers[names.rateLimit] = protocol.formatRateLimit([
        { name: error.tier, limit: error.limit, remaining: error.remaining, reset: error.retryAfter }
      ])
      break
    }
  }
  return HttpServerResponse.unsafeJson(body(error), { status, headers })
}

/** @internal */
export const mapErrors = <E, R>(
  app: HttpApp.Default<E, R>
): HttpApp.Default<Exclude<E, Errors.SluiceError>, R> =>
  Effect.catchIf(
    app,
    (e): e is Extract<E, Errors.SluiceError> => isSluiceError(e),
    (e) => Effect.map(WireProtocol, (settings) => errorResponse(e, settings))
  ) as any

/** @internal */
export interface CriticalityOptions {
  readonly trust?: ((request: HttpServerRequest.HttpServerRequest) => boolean) | undefined
  readonly ceiling?: Criticality.Criticality | undefined
  readonly default?: Criticality.Criticality | undefined
}

/** @internal */
export const criticality =
  (options: CriticalityOptions = {}) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> => {
    const trust = options.trust ?? (() => false)
    const ceiling = options.ceiling ?? "CRITICAL"
    const fallback = options.default ?? "CRITICAL"
    return Effect.flatMap(
      Effect.zip(HttpServerRequest.HttpServerRequest, WireProtocol),
      ([request, settings]) => {
        const claimed = Criticality.parse(
          protocol.headerValue(request.headers[settings.headers.criticality]),
          fallback
        )
        let trusted = false
        try {
          trusted = trust(request) === true
        } catch {
          trusted = false
        }
        const level = trusted ? claimed : Criticality.clamp(claimed, ceiling)
        return Effect.locally(app, Criticality.currentCriticality, level)
      }
    )
  }

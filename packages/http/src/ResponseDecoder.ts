/**
 * Turns an HTTP response into Sluice's typed outcomes (DESIGN §4):
 *
 * | response | outcome |
 * |---|---|
 * | `429` + `Retry-After` / `RateLimit` | `QuotaExceeded` with `retryAfter`, tier, limit, remaining |
 * | `503` (+ `Retry-After`) | `Overloaded { reason: "server", retryAfter? }` |
 * | `503`/`429`/5xx + `x-sluice-dont-retry` | `DontRetry { reason: "server" }` wrapping the above |
 * | `x-sluice-throttle: 1` (or the JSON attribute) | success, with `throttled = true` |
 * | anything else | the response, untouched |
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type { Errors } from "@sluice/core"
import type { WireProtocolSettings } from "./Protocol.js"
import * as internal from "./internal/responseDecoder.js"

/**
 * The errors a response decodes to.
 *
 * @since 0.1.0
 * @category errors
 */
export type DecodeError = Errors.Overloaded | Errors.QuotaExceeded | Errors.DontRetry

/**
 * The part of a response the header verdict reads: status and lower-case headers.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResponseLike extends internal.ResponseLike {}

/**
 * What the headers of a response say: a failure, and whether it asked to slow down.
 *
 * @since 0.1.0
 * @category models
 */
export interface Verdict {
  readonly error: DecodeError | undefined
  readonly throttled: boolean
}

/**
 * Reads the verdict from status and headers only (pure; `nowMillis` resolves an
 * HTTP-date `Retry-After`).
 *
 * @example
 * ```ts
 * import { Protocol, ResponseDecoder } from "@sluice/http"
 *
 * const settings = Protocol.make()
 * ResponseDecoder.verdict({ status: 503, headers: { "retry-after": "2" } }, 0, settings).error
 * // Overloaded { reason: "server", retryAfter: 2 seconds }
 * ```
 * @since 0.1.0
 * @category utils
 */
export const verdict: (response: ResponseLike, nowMillis: number, settings: WireProtocolSettings) => Verdict =
  internal.verdict

/**
 * Decodes a response: fails with the typed error, or succeeds with the response
 * and the throttle flag (from the header, or the JSON attribute when `json` is
 * true and the body is a JSON object). "Now" comes from Effect's `Clock`.
 *
 * @example
 * ```ts
 * import { HttpClient } from "@effect/platform"
 * import { Protocol, ResponseDecoder } from "@sluice/http"
 * import { Effect } from "effect"
 *
 * const program = HttpClient.get("http://localhost:8080/").pipe(
 *   Effect.flatMap((response) => ResponseDecoder.decode(response, Protocol.make(), false))
 * )
 * ```
 * @since 0.1.0
 * @category utils
 */
export const decode: <Res extends ResponseLike & { readonly json: Effect.Effect<unknown, unknown> }>(
  response: Res,
  settings: WireProtocolSettings,
  json: boolean
) => Effect.Effect<readonly [Res, boolean], DecodeError> = internal.decode

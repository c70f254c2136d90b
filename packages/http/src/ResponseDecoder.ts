/**
 * Turns an HTTP response into Sluice's typed outcomes (docs/ARCHITECTURE.md §4):
 *
 * | response | outcome |
 * |---|---|
 * | `429` + `Retry-After` / `RateLimit-Policy` / `RateLimit` | `QuotaExceeded` with `retryAfter`, tier, limit, remaining |
 * | `503` (+ `Retry-After`) | `Overloaded { reason: "server", retryAfter? }` |
 * | `503`/`429`/5xx + `x-sluice-dont-retry` | `DontRetry { reason: "server" }` wrapping the above |
 * | `x-sluice-throttle: 1` (or the JSON attribute) | success, with `throttled = true` |
 * | anything else | the response, untouched |
 *
 * The status and headers decide what an error is; its body ({@link withBody}) gives
 * back what they cannot hold. A Sluice server's body (`Protocol.formatErrorBody`)
 * decodes into the same typed error: the reason as the server wrote it, the hint in
 * milliseconds, the quota's fields, and why and after how many attempts a tier below
 * gave up. A foreign body's JSON `reason`, `message` or `error` string, or its text,
 * becomes the `Overloaded` reason (200 characters at most).
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { Errors } from "@sluice/core"
import type { WireProtocolSettings } from "./Protocol.js"
import type * as Wire from "@sluice/kernel/wire/Verdict"
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
export interface ResponseLike extends Wire.ResponseLike {}

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
 * const { error } = ResponseDecoder.verdict({ status: 503, headers: { "retry-after": "2" } }, 0, settings)
 * // the error as a Sluice server would send it
 * console.log(JSON.stringify(Protocol.formatErrorBody(error!)))
 * // prints: {"error":{"_tag":"Overloaded","reason":"server","retryAfterMs":2000}}
 * ```
 * @since 0.1.0
 * @category utils
 */
export const verdict: (response: ResponseLike, nowMillis: number, settings: WireProtocolSettings) => Verdict =
  internal.verdict

/**
 * The verdict's error with what the error body says. With a Sluice server's body
 * the error is the one the server failed with, seen from the caller: origin
 * `"remote"`, hints no longer than `settings.maxRetryAfter`, and the server's own
 * throttle or breaker refusals as an `Overloaded` that names them (to the caller they
 * are the server refusing the work). The status keeps the last word on what the error
 * is: a body that disagrees with it (a quota on a `503`) only fills in what agrees.
 *
 * @example
 * ```ts
 * import { Protocol, ResponseDecoder } from "@sluice/http"
 *
 * const settings = Protocol.make()
 * const { error } = ResponseDecoder.verdict({ status: 503, headers: { "retry-after": "2" } }, 0, settings)
 * const fromBody = ResponseDecoder.withBody(error!, `{"error":{"_tag":"Overloaded","reason":"db busy","retryAfterMs":1500}}`, settings)
 * console.log(JSON.stringify(Protocol.formatErrorBody(fromBody)))
 * // prints: {"error":{"_tag":"Overloaded","reason":"db busy","retryAfterMs":1500}}
 * const plain = ResponseDecoder.withBody(error!, "maintenance", settings)
 * console.log(JSON.stringify(Protocol.formatErrorBody(plain)))
 * // prints: {"error":{"_tag":"Overloaded","reason":"maintenance","retryAfterMs":2000}}
 * ```
 * @since 0.2.0
 * @category utils
 */
export const withBody: (error: DecodeError, body: string, settings: WireProtocolSettings) => DecodeError =
  internal.withBody

/**
 * What {@link decode} reads of a response: status, headers, and the body as JSON
 * (for the throttle attribute) or as text (for an error; from `stream` when the
 * response has one, so that an error body costs at most 64 KB whatever its size).
 *
 * @since 0.2.0
 * @category models
 */
export interface Decodable extends ResponseLike {
  readonly json: Effect.Effect<unknown, unknown>
  readonly text: Effect.Effect<string, unknown>
  /**
   * The body as bytes (an `HttpClientResponse` has it): when present, an error
   * body is read from it, at most 64 KB, and the rest is dropped unread.
   */
  readonly stream?: Stream.Stream<Uint8Array, unknown> | undefined
}

/**
 * Decodes a response: fails with the typed error, read from the headers and the
 * error body ({@link withBody}), or succeeds with the response and the throttle
 * flag (from the header, or the JSON attribute when `json` is true and the body is
 * a JSON object). "Now" comes from Effect's `Clock`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — calls an HTTP backend at a placeholder address
 * import { Protocol, ResponseDecoder } from "@sluice/http"
 * import { Effect } from "effect"
 * import { HttpClient } from "effect/http"
 *
 * const program = HttpClient.get("http://localhost:8080/").pipe(
 *   Effect.flatMap((response) => ResponseDecoder.decode(response, Protocol.make(), false))
 * )
 * ```
 * @since 0.1.0
 * @category utils
 */
export const decode: <Res extends Decodable>(
  response: Res,
  settings: WireProtocolSettings,
  json: boolean
) => Effect.Effect<readonly [Res, boolean], DecodeError> = internal.decode

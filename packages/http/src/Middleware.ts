/**
 * Server middleware that speaks the Sluice wire protocol, for `HttpApp`s and
 * `HttpRouter`s of `@effect/platform`. Each piece is usable alone; a typical
 * stack, outermost first:
 *
 * `criticality` → `mapErrors` → `retryGuard` → `loadShed` → `quota` → `backpressure` → handler
 *
 * @since 0.1.0
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { Criticality, Errors } from "@sluice/core"
import type { WireProtocolSettings } from "./Protocol.js"
import * as internal from "./internal/middleware.js"

/**
 * Options of {@link criticality}.
 *
 * @since 0.1.0
 */
export interface CriticalityOptions {
  /** Callers whose claimed level is believed as is (default: nobody). */
  readonly trust?: ((request: HttpServerRequest.HttpServerRequest) => boolean) | undefined
  /** The highest level an untrusted caller gets (default `CRITICAL`). */
  readonly ceiling?: Criticality.Criticality | undefined
  /** The level of a request without (or with an unreadable) header (default `CRITICAL`). */
  readonly default?: Criticality.Criticality | undefined
}

/**
 * Reads `x-sluice-criticality`, clamps it to the ceiling unless the caller is
 * trusted, and runs the handler with that level in `Criticality.currentCriticality`,
 * so shedders see it and outgoing Sluice client calls carry it on.
 *
 * @example
 * ```ts
 * import { HttpRouter, HttpServerResponse } from "@effect/platform"
 * import { Middleware } from "@sluice/http"
 *
 * const app = HttpRouter.empty.pipe(
 *   HttpRouter.get("/", HttpServerResponse.text("ok")),
 *   Middleware.criticality({ trust: (req) => req.headers["x-internal"] === "1", ceiling: "SHEDDABLE_PLUS" })
 * )
 * ```
 * @since 0.1.0
 */
export const criticality: (
  options?: CriticalityOptions
) => <E, R>(app: HttpApp.Default<E, R>) => HttpApp.Default<E, R> = internal.criticality

/**
 * The response a Sluice error becomes: `DontRetry` and `Throttled` → `503` +
 * `x-sluice-dont-retry: 1`; `Overloaded` → `503` (+ `Retry-After`); `CircuitOpen`
 * → `503` + `Retry-After`; `QuotaExceeded` → `429` + `Retry-After` + `RateLimit`.
 * The body is the error encoded with `Errors.SluiceError`: `{ "error": ... }`.
 *
 * @example
 * ```ts
 * import { Errors } from "@sluice/core"
 * import { Middleware, Protocol } from "@sluice/http"
 *
 * const response = Middleware.errorResponse(new Errors.Overloaded({ reason: "shed" }), Protocol.make())
 * response.status // 503
 * ```
 * @since 0.1.0
 */
export const errorResponse: (
  error: Errors.SluiceError,
  settings: WireProtocolSettings
) => HttpServerResponse.HttpServerResponse = internal.errorResponse

/**
 * Maps the Sluice errors a handler fails with to their responses
 * ({@link errorResponse}); other errors pass through.
 *
 * @example
 * ```ts
 * import { HttpRouter } from "@effect/platform"
 * import { Errors } from "@sluice/core"
 * import { Middleware } from "@sluice/http"
 * import { Effect } from "effect"
 *
 * const app = HttpRouter.empty.pipe(
 *   HttpRouter.get("/", Effect.fail(new Errors.Overloaded({ reason: "busy" }))),
 *   Middleware.mapErrors
 * ) // GET / answers 503
 * ```
 * @since 0.1.0
 */
export const mapErrors: <E, R>(
  app: HttpApp.Default<E, R>
) => HttpApp.Default<Exclude<E, Errors.SluiceError>, R> = internal.mapErrors

/**
 * Is this a Sluice error?
 *
 * @since 0.1.0
 */
export const isSluiceError: (u: unknown) => u is Errors.SluiceError = internal.isSluiceError

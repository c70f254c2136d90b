/**
 * @sluice/http: a resilient HttpClient and server middleware for
 * `effect/http` that speak the Sluice wire protocol.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Middleware from "./Middleware.js"
/** @since 0.1.0 */
export * as Protocol from "./Protocol.js"
/** @since 0.1.0 */
export * as ResponseDecoder from "./ResponseDecoder.js"
/** @since 0.1.0 */
export * as ThrottleSignal from "./ThrottleSignal.js"
/** @since 0.1.0 */
export * as SluiceHttpClient from "./SluiceHttpClient.js"
/** @since 0.2.0 */
export * as Trust from "./Trust.js"

/**
 * Who is believed. A caller's request carries metadata that changes how the
 * server treats it and others: `x-sluice-criticality` (a caller claiming
 * `CRITICAL_PLUS` is shed last) and `x-sluice-attempt` (a server whose traffic
 * is mostly retries answers "don't retry" to everybody). Anybody can send
 * those headers, so the server middleware believes them only as far as a
 * {@link TrustPolicy} says:
 *
 * - trusted callers: the claimed criticality is used as is, and their attempt
 *   numbers feed the `RetryHistogram` that decides "don't retry";
 * - everyone else: the claimed criticality is clamped to a ceiling
 *   (`Middleware.criticality`), and the attempt number is recorded apart
 *   (`RetryHistogram.recordUntrustedUnsafe`, metric tag `trusted=false`), where
 *   it can change no answer.
 *
 * A policy is a synchronous function of the request; one that throws trusts
 * nobody. Build it from what the caller cannot forge:
 *
 * - {@link sharedSecret}: a header carrying a secret that only your own tiers
 *   know, compared in constant time. Safe behind proxies and load balancers, as
 *   long as the secret stays inside (never forward it to third parties).
 * - {@link peer} / {@link loopback}: the TCP peer address (the request's
 *   `peerAddress`: the socket's peer, which `HttpMiddleware.xForwardedHeaders`
 *   leaves alone when it replaces `remoteAddress` from a header). Only meaningful
 *   when no proxy on that address forwards outside traffic: behind a proxy every
 *   request comes from the proxy.
 * - your own: an authenticated principal (mTLS peer certificate, a verified
 *   token) that your authentication middleware put on the request.
 *
 * {@link all} and {@link any} combine policies.
 *
 * @since 0.2.0
 */
import type { Options } from "@sluice/core"
import type * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as Redacted from "effect/Redacted"
import * as Trust from "@sluice/kernel/wire/Trust"
import * as internal from "./internal/trust.js"

/**
 * Decides whether the metadata a request carries about itself (criticality,
 * attempt number) is believed. Must be synchronous and cheap: it runs once per
 * request.
 *
 * @since 0.2.0
 * @category models
 */
export type TrustPolicy = (request: HttpServerRequest.HttpServerRequest) => boolean

/**
 * Trusts nobody (the default of every middleware).
 *
 * @since 0.2.0
 * @category policies
 */
export const none: TrustPolicy = Trust.none

/**
 * Trusts everybody: for tests and for servers that only their own tiers can
 * reach at all (e.g. a private network with no ingress). Not for a server the
 * public can reach.
 *
 * @since 0.2.0
 * @category policies
 */
export const everyone: TrustPolicy = Trust.everyone

/**
 * Options of {@link sharedSecret}: the `secret` (at least 16 characters,
 * `Redacted` so it does not end up in logs) and the request `header` that
 * carries it (lower case, default `x-sluice-trust`).
 *
 * @since 0.2.0
 * @category models
 */
export interface SharedSecretOptions {
  readonly secret: Redacted.Redacted<string>
  readonly header?: string | undefined
}

/**
 * Trusts a request whose `header` equals the secret. Both values are hashed
 * (SHA-256) and compared with `crypto.timingSafeEqual`, so the time taken does
 * not tell an attacker how much of a guess was right, nor the secret's length.
 * Fails with `InvalidOptions` naming the field for a short secret or a bad
 * header name.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import { Middleware, Trust } from "@sluice/http"
 * import { Config, Effect, Layer } from "effect"
 * import { HttpRouter, HttpServerResponse } from "effect/http"
 *
 * const SluiceLive = Layer.unwrap(
 *   Effect.gen(function* () {
 *     const secret = yield* Config.Redacted("SLUICE_TRUST_SECRET")
 *     const trust = yield* Trust.sharedSecret({ secret })
 *     return HttpRouter.middleware((app) => app.pipe(Middleware.retryGuard(), Middleware.criticality({ trust })), {
 *       global: true
 *     })
 *   })
 * )
 * const App = Layer.mergeAll(HttpRouter.add("GET", "/", HttpServerResponse.text("ok")), SluiceLive)
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const sharedSecret: (
  options: SharedSecretOptions
) => Effect.Effect<TrustPolicy, Options.InvalidOptions> = internal.sharedSecret

/**
 * {@link sharedSecret}, synchronously: throws `InvalidOptions`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Trust } from "@sluice/http"
 * import { Redacted } from "effect"
 *
 * const trust = Trust.sharedSecretUnsafe({ secret: Redacted.make("correct horse battery staple") })
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const sharedSecretUnsafe: (options: SharedSecretOptions) => TrustPolicy = internal.sharedSecretUnsafe

/**
 * Trusts a request whose TCP peer address (`peerAddress`) satisfies `predicate`
 * (a request without a known address is not trusted). See the module notes on
 * proxies.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Trust } from "@sluice/http"
 *
 * const trust = Trust.peer((address) => address === "10.0.0.7")
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const peer: (predicate: (address: string) => boolean) => TrustPolicy = internal.peer

/**
 * Trusts peers on the loopback interface (`127.0.0.0/8`, `::1`,
 * `::ffff:127.x.y.z`). Unsafe when a proxy on the same host forwards outside
 * traffic: then every request comes from loopback.
 *
 * @since 0.2.0
 * @category policies
 */
export const loopback: TrustPolicy = internal.loopback

/**
 * Is this a loopback address?
 *
 * @since 0.2.0
 * @category guards
 */
export const isLoopbackAddress: (address: string) => boolean = Trust.isLoopbackAddress

/**
 * Trusts a request only if every policy does (none given: nobody), e.g. a
 * peer on the private network *and* the shared secret.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Trust } from "@sluice/http"
 * import { Redacted } from "effect"
 *
 * const trust = Trust.all(
 *   Trust.peer((address) => address.startsWith("10.")),
 *   Trust.sharedSecretUnsafe({ secret: Redacted.make("correct horse battery staple") })
 * )
 * ```
 * @since 0.2.0
 * @category combinators
 */
export const all: (...policies: ReadonlyArray<TrustPolicy>) => TrustPolicy = Trust.all

/**
 * Trusts a request if any policy does (none given: nobody).
 *
 * @since 0.2.0
 * @category combinators
 */
export const any: (...policies: ReadonlyArray<TrustPolicy>) => TrustPolicy = Trust.any

/**
 * Runs a policy on a request; a policy that throws or answers anything but
 * `true` does not trust.
 *
 * @since 0.2.0
 * @category utils
 */
export const evaluate: (policy: TrustPolicy, request: HttpServerRequest.HttpServerRequest) => boolean =
  Trust.evaluate

/**
 * Whether the current request's caller is trusted, as decided by
 * `Middleware.criticality` (outside); `false` where no such middleware ran.
 * `Middleware.retryGuard` reads it unless given its own `trust`, so one policy
 * decides both.
 *
 * @since 0.2.0
 * @category references
 */
export const currentCallerTrusted: Context.Reference<boolean> = internal.currentCallerTrusted

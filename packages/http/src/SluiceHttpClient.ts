/**
 * A resilient `HttpClient` that speaks the Sluice wire protocol.
 *
 * It wraps the `HttpClient` of `effect/http` (e.g. `NodeHttpClient.layerUndici`
 * of `@effect/platform-node`) and is provided under its own service,
 * {@link SluiceHttpClient}, because its error type adds Sluice's errors to
 * `HttpClientError` (the `HttpClient` service cannot carry them):
 * `HttpClientError | Errors.Throttled | Errors.DontRetry`. `Overloaded`,
 * `QuotaExceeded` and timeouts never escape: they are retried here, at the layer
 * directly above the server that refused, and come out as `DontRetry` once
 * attempts or budget are spent, so nobody above retries them again.
 *
 * Per request, from the outside in:
 *
 * 1. **Retry policy** (`maxAttempts`, default 3; the client's `RetryBudget`;
 *    waits honour `Retry-After` up to `maxRetryAfter`). Outermost, so every
 *    attempt passes again through everything below: a retry is a new request for
 *    the throttle, needs its own permit, and gets its own attempt number. Only
 *    idempotent methods are retried unless the caller opts in.
 * 2. **Headers**: `x-sluice-criticality` from `Criticality.currentCriticality` and
 *    `x-sluice-attempt` from `Retry.currentAttempt` (both `Context.Reference`s).
 *    Set inside the retry loop, because the attempt number only exists there.
 * 3. **Adaptive throttle** per host and criticality level: may fail locally with `Throttled` (never
 *    retried). Before the limiter, so a request the client refuses does not wait
 *    for or hold a permit, and still counts as a request in the throttle's formula.
 * 4. **Concurrency limiter** per host and criticality level (default: the
 *    congestion window; `limitPerCriticality: false` for one per host). Its
 *    permit covers only the network exchange and the decoding. The private limiter
 *    of {@link makeDefault} serves its waiters newest first (`order: "lifo"`).
 * 5. **Send** (bounded by `attemptTimeout`) and **decode**: `429` →
 *    `QuotaExceeded`, `503` → `Overloaded`, `x-sluice-dont-retry` → `DontRetry`,
 *    transport errors (an `HttpClientError` whose reason is a `TransportError`)
 *    marked retryable. Innermost, so the limiter sees a `503` as a drop and the
 *    throttle as a rejection. A throttle flag does not fail the
 *    request; it is published to {@link ThrottleSignal} when that is provided.
 *
 * Steps 1, 3 and 4 are one composition for every request, `policy.around(gates)`
 * (`Retry.Policy`): the host's throttle and limiter gates (those that are on) under the
 * retry policy, or under a one-try policy for a request that is not retried.
 *
 * The policies are services: {@link layer} and {@link make} take the `RetryBudget`,
 * `AdaptiveThrottle` and `ConcurrencyLimiter` from context, so an app shares them with
 * its clients (and its clients with each other: the throttle and the limiter are per
 * host, the budget per client `name`), reads their state, and configures them with
 * their own layers. {@link layerDefault} and {@link makeDefault} build private
 * instances from options instead.
 *
 * **Gotchas**
 *
 * - Code that yields `HttpClient.HttpClient` gets the client this one wraps, with
 *   none of the policies: yield {@link SluiceHttpClient} for the resilient one.
 * - Header names and the throttle attribute are read from `Protocol.WireProtocol`
 *   when the client is built, and `ThrottleSignal` is looked up then too: provide
 *   them to the layer (or `make`), not to the calls.
 * - `timeout` ends when a returned response has its headers; reading its body is
 *   the caller's, and unbounded unless the caller bounds it.
 *
 * @since 0.1.0
 */
import type { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import type { Errors, Options } from "@sluice/core"
import type { Hedge, RetryBudget } from "@sluice/retry"
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import type * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Layer from "effect/Layer"
import type * as Schedule from "effect/Schedule"
import * as internal from "./internal/client.js"

/**
 * The errors the client fails with.
 *
 * @since 0.1.0
 * @category errors
 */
export type ClientError = HttpClientError.HttpClientError | Errors.Throttled | Errors.DontRetry

/**
 * The client: an `HttpClient` whose error type carries Sluice's errors.
 *
 * @since 0.1.0
 * @category models
 */
export interface Client extends HttpClient.HttpClient.With<ClientError> {}

/**
 * The client's service.
 *
 * @example
 * ```ts
 * // snippet: compile-only — calls an HTTP backend at a placeholder address
 * import { SluiceHttpClient } from "@sluice/http"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const client = yield* SluiceHttpClient.SluiceHttpClient
 *   const response = yield* client.get("http://localhost:8080/items")
 *   return yield* response.json
 * })
 * ```
 * @since 0.1.0
 * @category tags
 */
export class SluiceHttpClient extends Context.Service<SluiceHttpClient, Client>()(
  "@sluice/http/SluiceHttpClient"
) {}

/**
 * Per-client options. Scalars are validated with Schema (a bad value fails the
 * layer with `InvalidOptions` naming the field):
 *
 * - `maxAttempts` (default 3, first try included), `schedule` (backoff, default
 *   `Backoff.defaultSchedule`), `maxRetryAfter` (longest wait honoured, default
 *   10 s; a `429` asking for longer is not retried),
 * - `timeout`: the deadline of the whole call — the wait for a limiter permit,
 *   every attempt, the backoff between them, and reading any error body; a call
 *   that runs out of time fails with `DontRetry` (reason `"timeout"`). No retry is
 *   scheduled, and no budget spent, that could not start before it. It ends when
 *   a response the client returns (a 2xx, or any status it does not fail) has
 *   its headers: reading that body (`response.json`, `.text`, `.stream`) is the
 *   caller's and not bounded by it; wrap the read in `Effect.timeout` where a body
 *   may stall,
 * - `attemptTimeout` (default: `timeout`): the bound on each attempt (send and
 *   error body), measured from its send, and the only one that says the backend
 *   was too slow: an attempt that exceeds it fails with a `Cause.TimeoutError`, a
 *   drop the limiter and throttle learn from, retried while the deadline leaves
 *   room. An exchange cut off sooner, because the call's deadline was spent
 *   waiting here (for a permit, in a backoff), is ignored like a cancellation: no
 *   limit falls, the throttle counts nothing, nothing is retried (a first try that
 *   waited for nothing had the whole call, so it is bounded by the deadline),
 * - `retryableStatuses` (default `[408, 502, 503, 504]`, as `HttpClient.retryTransient`
 *   minus `500` and `429`: a `500` is an application error, retried only when listed;
 *   a `429` always follows its `Retry-After`): these statuses fail the attempt with
 *   `Overloaded` carrying the server's reason (from the error body), and are retried;
 *   any other status is returned as a response,
 * - `errorBodyTimeout` (default 1 s): how long an error body is read for the
 *   server's reason before it is dropped,
 * - `retryNonIdempotent` (default false: only GET, HEAD, OPTIONS, PUT, DELETE,
 *   TRACE are retried; see {@link withRetries} for a per-call opt-in),
 * - `throttleFromJson` (also read the throttle flag from a JSON body attribute),
 * - `key` (the per-backend key of throttle and limiter, default the URL's host),
 * - `limitPerCriticality` (default true): the throttle and the limiter keep their
 *   state per backend key and criticality level (their key is `host/LEVEL`), so a
 *   level learns only from its own drops. A server that sheds by priority refuses
 *   `SHEDDABLE` work while it still admits `CRITICAL`; with one state per host
 *   (`false`) those sheds shrink the window and raise the refusals of every level,
 *   and the critical work waits behind them,
 * - `name` (default `"sluice-http"`): the metric tag, and the key of this client's
 *   budget in the `RetryBudget` service (clients with the same name share one budget),
 * - `hedge` ({@link HedgeOptions}; default off): after a delay, a slow retried request of a
 *   hedged method gets another copy; the first success wins, the other is cancelled.
 *
 * The policies themselves are configured where they are built: by their own layers
 * for {@link layer}, by {@link DefaultOptions} for {@link layerDefault}.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClientOptions {
  readonly maxAttempts?: number | undefined
  readonly schedule?: Schedule.Schedule<unknown, any> | undefined
  readonly maxRetryAfter?: Duration.Input | undefined
  readonly timeout?: Duration.Input | undefined
  readonly retryNonIdempotent?: boolean | undefined
  readonly throttleFromJson?: boolean | undefined
  readonly key?: ((request: HttpClientRequest.HttpClientRequest) => string) | undefined
  readonly name?: string | undefined
  readonly attemptTimeout?: Duration.Input | undefined
  readonly retryableStatuses?: ReadonlyArray<number> | undefined
  readonly errorBodyTimeout?: Duration.Input | undefined
  readonly limitPerCriticality?: boolean | undefined
  readonly hedge?: HedgeOptions | undefined
}

/**
 * The client's `hedge` option: `Hedge` options (`delay`, or a learned `quantile`; the warm-up
 * `minSamples` successful calls per host within `window`; `maxHedges`) and the `methods` hedged (default GET and HEAD; a
 * request is hedged only when it is also retried, see `retryNonIdempotent` and
 * {@link withRetries}). The hedges spend this client's retry budget, pass its throttle and
 * limiter, and pause per host while the host signals throttle or the throttle rejects.
 *
 * @since 1.1.0
 * @category models
 */
export interface HedgeOptions extends Omit<Hedge.HedgeOptions, "policy" | "name"> {
  readonly methods?: ReadonlyArray<string> | undefined
}

/**
 * Options of {@link layerDefault} and {@link makeDefault}: the per-client
 * {@link ClientOptions} and the options of the client's private policy instances,
 * each of which can be turned off with `false`: `budget` (`RetryBudget` options),
 * `throttle` (`AdaptiveThrottle` options), `limiter` (`ConcurrencyLimiter` service
 * options, e.g. `{ algorithm: AimdLimit.factory() }`; `order` defaults to `"lifo"`
 * here: under overload the newest waiter has the most of its deadline left, while the
 * oldest would be sent to hold a server's slot for an answer nobody waits for).
 *
 * @since 0.2.0
 * @category models
 */
export interface DefaultOptions extends ClientOptions {
  readonly budget?: RetryBudget.RetryBudgetOptions | false | undefined
  readonly throttle?: AdaptiveThrottle.AdaptiveThrottleOptions | false | undefined
  readonly limiter?: ConcurrencyLimiter.ServiceOptions | false | undefined
}

/**
 * The policy services {@link layer} and {@link make} take from context.
 *
 * @since 0.2.0
 * @category models
 */
export type Policies =
  RetryBudget.RetryBudget | AdaptiveThrottle.AdaptiveThrottle | ConcurrencyLimiter.ConcurrencyLimiter

/**
 * Builds a client on an `HttpClient` of `effect/http` and the policy services in context
 * ({@link Policies}). Header names come from `Protocol.WireProtocol`; throttle
 * signals go to `ThrottleSignal` when it is in context. Policy options (`budget`,
 * `throttle`, `limiter`) are refused with `InvalidOptions`: they belong to the
 * services' own layers, or to {@link makeDefault}.
 *
 * @example
 * ```ts
 * // snippet: compile-only — calls an HTTP backend at a placeholder address
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
 * import { SluiceHttpClient } from "@sluice/http"
 * import { RetryBudget } from "@sluice/retry"
 * import { Effect, Layer } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const client = yield* SluiceHttpClient.make({ maxAttempts: 3, timeout: "2 seconds" })
 *   return yield* client.get("http://localhost:8080/")
 * }).pipe(
 *   Effect.provide(
 *     Layer.mergeAll(NodeHttpClient.layerUndici, RetryBudget.layer(), AdaptiveThrottle.layer(), ConcurrencyLimiter.layer())
 *   )
 * )
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (
  options?: ClientOptions
) => Effect.Effect<Client, Options.InvalidOptions, HttpClient.HttpClient | Policies> = internal.make

/**
 * Builds a client with its own private budget, throttle and limiter, made from
 * `options`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — calls an HTTP backend at a placeholder address
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { AimdLimit } from "@sluice/adaptive"
 * import { SluiceHttpClient } from "@sluice/http"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const client = yield* SluiceHttpClient.makeDefault({ maxAttempts: 3, limiter: { algorithm: AimdLimit.factory() } })
 *   return yield* client.get("http://localhost:8080/")
 * }).pipe(Effect.provide(NodeHttpClient.layerUndici))
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const makeDefault: (
  options?: DefaultOptions
) => Effect.Effect<Client, Options.InvalidOptions, HttpClient.HttpClient> = internal.makeDefault

/**
 * The client as a Layer on an `HttpClient` of `effect/http` and the app's policy
 * services: the `RetryBudget`, `AdaptiveThrottle` and `ConcurrencyLimiter` it uses
 * are the ones in context, shared with the rest of the app.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
 * import { SluiceHttpClient } from "@sluice/http"
 * import { RetryBudget } from "@sluice/retry"
 * import { Layer } from "effect"
 *
 * const PoliciesLive = Layer.mergeAll(RetryBudget.layer({ ratio: 0.1 }), AdaptiveThrottle.layer(), ConcurrencyLimiter.layer())
 * const ClientLive = SluiceHttpClient.layer({ maxAttempts: 3, name: "orders" }).pipe(
 *   Layer.provideMerge(PoliciesLive),
 *   Layer.provide(NodeHttpClient.layerUndici)
 * )
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options?: ClientOptions
): Layer.Layer<SluiceHttpClient, Options.InvalidOptions, HttpClient.HttpClient | Policies> =>
  Layer.effect(SluiceHttpClient, internal.make(options))

/**
 * The client as a Layer on an `HttpClient` of `effect/http` alone, with its own private
 * budget, throttle and limiter built from `options`.
 * Two such clients share nothing.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { CongestionWindow } from "@sluice/adaptive"
 * import { SluiceHttpClient } from "@sluice/http"
 * import { Layer } from "effect"
 *
 * const ClientLive = SluiceHttpClient.layerDefault({
 *   maxAttempts: 3,
 *   budget: { ratio: 0.1 },
 *   limiter: { algorithm: CongestionWindow.factory({ initial: 64 }) }
 * }).pipe(Layer.provide(NodeHttpClient.layerUndici))
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerDefault = (
  options?: DefaultOptions
): Layer.Layer<SluiceHttpClient, Options.InvalidOptions, HttpClient.HttpClient> =>
  Layer.effect(SluiceHttpClient, internal.makeDefault(options))

/**
 * {@link layer} with its options read from `Config` (e.g. environment variables);
 * a missing or malformed value fails the layer with `ConfigError`, a bad value with
 * `InvalidOptions` naming the field. The policies come from context, as for `layer`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import { SluiceHttpClient } from "@sluice/http"
 * import { Config, Duration } from "effect"
 *
 * const ClientLive = SluiceHttpClient.layerConfig(
 *   Config.all({
 *     maxAttempts: Config.Int("HTTP_MAX_ATTEMPTS").pipe(Config.withDefault(3)),
 *     timeout: Config.Duration("HTTP_TIMEOUT").pipe(Config.withDefault(Duration.seconds(2)))
 *   })
 * )
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<ClientOptions>
): Layer.Layer<
  SluiceHttpClient,
  Options.InvalidOptions | Config.ConfigError,
  HttpClient.HttpClient | Policies
> => Layer.unwrap(Effect.map(config, layer))

/**
 * Opts the requests made by an effect in (`true`) or out (`false`) of retries,
 * whatever their method: e.g. a POST the caller knows to be idempotent.
 *
 * @example
 * ```ts
 * // snippet: compile-only — calls an HTTP backend at a placeholder address
 * import { SluiceHttpClient } from "@sluice/http"
 * import { Effect } from "effect"
 *
 * const create = Effect.flatMap(SluiceHttpClient.SluiceHttpClient, (client) =>
 *   client.post("http://localhost:8080/orders", { headers: { "idempotency-key": "abc" } })
 * ).pipe(SluiceHttpClient.withRetries(true))
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const withRetries: {
  (allow: boolean): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, allow: boolean): Effect.Effect<A, E, R>
} = dual(2, <A, E, R>(self: Effect.Effect<A, E, R>, allow: boolean) =>
  Effect.provideService(self, internal.allowRetries, allow)
)

/**
 * The default per-backend key: the request URL's `host[:port]`.
 *
 * @since 0.1.0
 * @category utils
 */
export const hostOf: (request: HttpClientRequest.HttpClientRequest) => string = internal.hostOf

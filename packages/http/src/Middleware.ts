/**
 * Server middleware that speaks the Sluice wire protocol, for the HTTP handlers
 * of `effect/http`: each piece is a function from an {@link HttpApp} (an effect
 * that answers the current `HttpServerRequest`) to another. Each piece is usable
 * alone; a typical stack, outermost first:
 *
 * `criticality` → `mapErrors` → `retryGuard` → `degrade` → `loadShed` → `quota` → `backpressure` → handler
 *
 * (`degrade`, where a cheaper answer exists, directly outside `loadShed`.)
 *
 * **Details**
 *
 * Apply them where an `effect/http` app takes a function of its handler: around
 * the whole router with `HttpRouter.middleware(f, { global: true })` (missing
 * routes included), around one route's handler in `HttpRouter.add`, or around
 * `HttpRouter.toHttpEffect(routes)` before `HttpServer.serve`.
 *
 * **Gotchas**
 *
 * - The `middleware` option of `HttpServer.serve` and `HttpRouter.serve` runs
 *   around the sending of the response: what these functions change in a
 *   response would not reach the wire there.
 * - `pipe` applies the innermost first: `app.pipe(Middleware.loadShed(),
 *   Middleware.criticality())` runs `criticality` outside `loadShed`.
 * - `quota({ enforce: "overload" })` must run outside `loadShed`: it marks the
 *   over-quota request that the shedder and limiter inside then rank last.
 * - A caller that hangs up interrupts a route's handler (the router makes it
 *   interruptible), and so the Sluice client calls it makes; a plain effect given
 *   to `HttpServer.serve` runs uninterruptibly, to its end: serve handlers as
 *   routes, or wrap a plain one in `Effect.interruptible` inside these functions.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { LoadShedder } from "@sluice/adaptive"
 * import { Middleware } from "@sluice/http"
 * import { RetryHistogram } from "@sluice/retry"
 * import { Layer } from "effect"
 * import { HttpRouter, HttpServerResponse } from "effect/http"
 *
 * const Routes = HttpRouter.add("GET", "/items", HttpServerResponse.text("[]"))
 * const Sluice = HttpRouter.middleware(
 *   (app) => app.pipe(Middleware.loadShed(), Middleware.retryGuard(), Middleware.mapErrors, Middleware.criticality()),
 *   { global: true }
 * )
 * const App = Layer.mergeAll(Routes, Sluice).pipe(
 *   Layer.provide(Layer.merge(LoadShedder.layer({ capacity: 200 }), RetryHistogram.layer()))
 * )
 * ```
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import type * as ConcurrencyLimiter from "@sluice/adaptive/ConcurrencyLimiter"
import type * as LoadShedder from "@sluice/adaptive/LoadShedder"
import type * as ProportionalSampler from "@sluice/adaptive/ProportionalSampler"
import type * as ThresholdMonitor from "@sluice/adaptive/ThresholdMonitor"
import type { Criticality, Errors } from "@sluice/core"
import type { Quota } from "@sluice/quota"
import type { RetryHistogram } from "@sluice/retry"
import type { WireProtocolSettings } from "./Protocol.js"
import type * as Trust from "./Trust.js"
import * as internal from "./internal/middleware.js"

/**
 * What a middleware wraps and returns: an HTTP handler, an effect that answers the
 * current `HttpServerRequest` (a route's handler, a router's `asHttpEffect()`, or
 * what `HttpRouter.toHttpEffect` builds).
 *
 * @since 1.0.0
 * @category models
 */
export type HttpApp<E = never, R = never> = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  E,
  R | HttpServerRequest.HttpServerRequest
>

/**
 * Options of {@link criticality}.
 *
 * @since 0.1.0
 * @category models
 */
export interface CriticalityOptions {
  /**
   * Callers whose claimed level (and attempt number, for {@link retryGuard}) is
   * believed as is (default: nobody, `Trust.none`). See `Trust` for policies that
   * a caller cannot forge; a check of a plain header such as
   * `req.headers["x-internal"] === "1"` can be sent by anyone.
   */
  readonly trust?: Trust.TrustPolicy | undefined
  /** The highest level an untrusted caller gets (default `CRITICAL`). */
  readonly ceiling?: Criticality.Criticality | undefined
  /**
   * The level of a request without (or with an unreadable) header (default
   * `CRITICAL`); for an untrusted caller, clamped to the ceiling too.
   */
  readonly default?: Criticality.Criticality | undefined
  /**
   * How the caller's deadline (`x-sluice-deadline-ms`, the milliseconds it has left) becomes
   * the request's: `maxUntrusted`, the longest deadline an untrusted caller may claim (default
   * 30 seconds; a trusted caller's is believed up to a day), and `margin`, kept back for the
   * answer's way back (default 5 ms). `false`: the header is ignored.
   */
  readonly deadline?: DeadlineOptions | false | undefined
}

/**
 * Options of the deadline {@link criticality} reads from a request.
 *
 * @since 1.0.0
 * @category models
 */
export interface DeadlineOptions {
  readonly maxUntrusted?: Duration.Input | undefined
  readonly margin?: Duration.Input | undefined
}

/**
 * Reads the caller's context: `x-sluice-criticality`, clamped to the ceiling unless the
 * trust policy trusts the caller, into `Criticality.currentCriticality`, so shedders see it
 * and outgoing Sluice client calls carry it on; and `x-sluice-deadline-ms`, the time the
 * caller has left (clamped to `deadline.maxUntrusted` for an untrusted caller, less
 * `deadline.margin`), into `Retry.currentDeadline`, so {@link loadShed}'s queue lets no
 * request wait past it and every `SluiceHttpClient` call the handler makes lives under what
 * is left. A request whose caller has already given up is answered `503` with
 * `x-sluice-dont-retry` at once (`sluice_http_server_expired_total{stage="arrival"}`), and
 * its handler never runs. The trust verdict is also kept in `Trust.currentCallerTrusted`,
 * where {@link retryGuard} reads it: one policy decides both.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { Middleware, Trust } from "@sluice/http"
 * import { Redacted } from "effect"
 * import { HttpRouter, HttpServerResponse } from "effect/http"
 *
 * // Your own tiers send `x-sluice-trust: <secret>`; everyone else is clamped to SHEDDABLE_PLUS.
 * const trust = Trust.sharedSecretUnsafe({ secret: Redacted.make("a long random shared secret") })
 * const Criticality = HttpRouter.middleware(Middleware.criticality({ trust, ceiling: "SHEDDABLE_PLUS" }), {
 *   global: true
 * })
 * const Routes = HttpRouter.add("GET", "/", HttpServerResponse.text("ok"))
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const criticality: (options?: CriticalityOptions) => <E, R>(app: HttpApp<E, R>) => HttpApp<E, R> =
  internal.criticality

/**
 * The response a Sluice error becomes: `DontRetry` and `Throttled` → `503` +
 * `x-sluice-dont-retry: 1`; `Overloaded` and `CircuitOpen` → `503` with
 * `Retry-After` in whole seconds, at least 1, when the error carries a positive
 * delay (an open breaker: the time until it half-opens), and with
 * `x-sluice-dont-retry: 1` instead when the delay is infinite (a breaker isolated
 * by hand): never `Retry-After: 0`; `QuotaExceeded` → `429` + `Retry-After` +
 * `RateLimit-Policy` + `RateLimit` (a quota that never resets: no `Retry-After`,
 * `x-sluice-dont-retry: 1`). A `DontRetry` keeps the status and hint of what it
 * gave up on: wrapping a `QuotaExceeded` it is a `429` with the quota's headers,
 * wrapping an `Overloaded` or `CircuitOpen` a `503` with its `Retry-After`, both
 * with `x-sluice-dont-retry: 1`.
 * The body is the error in Sluice's own JSON encoding (`Protocol.formatErrorBody`),
 * which `SluiceHttpClient` and `ResponseDecoder` read back into the same typed error.
 *
 * @example
 * ```ts
 * import { Errors } from "@sluice/core"
 * import { Middleware, Protocol } from "@sluice/http"
 *
 * const response = Middleware.errorResponse(new Errors.Overloaded({ reason: "shed" }), Protocol.make())
 * console.log(response.status) // prints: 503
 * ```
 * @since 0.1.0
 * @category utils
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
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { Errors } from "@sluice/core"
 * import { Middleware } from "@sluice/http"
 * import { Effect } from "effect"
 * import { HttpRouter } from "effect/http"
 *
 * // GET / answers 503
 * const Route = HttpRouter.add("GET", "/", Effect.fail(new Errors.Overloaded({ reason: "busy" })).pipe(Middleware.mapErrors))
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const mapErrors: <E, R>(app: HttpApp<E, R>) => HttpApp<Exclude<E, Errors.SluiceError>, R> =
  internal.mapErrors

/**
 * Is this a Sluice error?
 *
 * @since 0.1.0
 * @category guards
 */
export const isSluiceError: (u: unknown) => u is Errors.SluiceError = internal.isSluiceError

/**
 * Options of {@link quota}: `client` identifies the caller (return `undefined`
 * to let a request through unchecked), `cost` its units (default 1), `headers`
 * whether allowed responses carry the rate-limit headers too (default true), and
 * `enforce`: `"always"` (the default) refuses a caller over its quota at once;
 * `"overload"` admits it while the server has room and sheds it first, within its
 * criticality level, when the server has none (see {@link quota}).
 *
 * @since 0.1.0
 * @category models
 */
export interface QuotaOptions {
  readonly client: (request: HttpServerRequest.HttpServerRequest) => string | undefined
  readonly cost?: ((request: HttpServerRequest.HttpServerRequest) => number) | undefined
  readonly headers?: boolean | undefined
  /** @since 1.0.0 */
  readonly enforce?: "always" | "overload" | undefined
}

/**
 * Checks the caller against the `Quota` service. Denied: `429` with
 * `Retry-After`, `RateLimit-Policy` and `RateLimit` (IETF draft) and the encoded
 * `QuotaExceeded`; the handler does not run. Allowed: the handler's response
 * gets the same rate-limit headers.
 *
 * `RateLimit-Policy` lists every tier with `q` and `w`: for a `sliding-window`
 * tier `q` is its limit and `w` its period; for a `gcra` tier `q` is the bucket
 * (`burst`, default `limit`) and `w` the time to refill it
 * (`burst × period / limit`), so `q / w` is the rate and `r` never exceeds `q`.
 * `RateLimit` lists every tier when the request passes (`t`: until the tier is
 * full again) and only the denying tiers on a `429` (`t`: until the request
 * would pass); `Retry-After` is the longest of those, so never earlier than any
 * `t`. A cost no tier can ever hold gets `429` without `Retry-After` and with
 * `x-sluice-dont-retry: 1`.
 *
 * **Limits that bite only in overload** (`enforce: "overload"`): a caller over its
 * plan is not refused at once. Its request runs marked over quota
 * (`Criticality.currentOverQuota`), and a {@link loadShed} inside ranks it last
 * within its criticality level: the `LoadShedder` sheds it from
 * `LoadShedder.overQuotaThreshold` (0.95 for `CRITICAL` by default, where
 * within-quota `CRITICAL` work goes on to 1.0) and judges the level's other work
 * without it, and the limiter's queue serves it after the level's other waiters
 * and displaces it first. Criticality still decides first: over-quota `CRITICAL`
 * work goes before within-quota `SHEDDABLE_PLUS` work. On an idle server the
 * caller is served; on an overloaded one it is answered with its quota's `429`,
 * `Retry-After` and `RateLimit` headers (as if refused here), so its client backs
 * off by the quota's hint. An admitted over-quota request is still charged: every
 * tier takes its cost, down to empty at most (`Quota.penalty`), so a long tier
 * counts what the caller used and the caller stays over its plan while it sends
 * above it, without a debt that outlives its excess. A caller denied lately is over
 * its plan for every request, also one its tiers admit (a caller at 8× its plan gets
 * 1 in 8 through them), until twice the denial's hint has passed. A cost no tier can hold, a
 * blocked client and a `fail-closed` decision are refused at once in either mode.
 * Put `quota` outside `loadShed` (applied after it in `pipe`) for this mode: inside,
 * the shedder has decided before the request is marked.
 *
 * A `client` of `undefined` skips the check. A `client` or `cost` function that
 * throws admits nobody, and a cost that is not a whole number of units (negative,
 * fractional, `NaN`, `Infinity`; `0` is a peek, as in `Quota.check`) is never
 * rounded: the request gets `400` with the body
 * `{ "error": { "_tag": "InvalidRequest", "field": "client" | "cost", "message" } }`,
 * the handler does not run and nothing is charged.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { Middleware } from "@sluice/http"
 * import { Effect } from "effect"
 * import { HttpRouter, HttpServerResponse } from "effect/http"
 *
 * const Items = HttpRouter.add(
 *   "GET",
 *   "/items",
 *   Effect.succeed(HttpServerResponse.text("[]")).pipe(
 *     Middleware.quota({ client: (req) => req.headers["x-api-key"] ?? "anonymous" })
 *   )
 * )
 *
 * // Quotas that bite only in overload: outside the shedder, which ranks over-quota work last
 * const Search = HttpRouter.add(
 *   "GET",
 *   "/search",
 *   Effect.succeed(HttpServerResponse.text("[]")).pipe(
 *     Middleware.loadShed(),
 *     Middleware.quota({ client: (req) => req.headers["x-api-key"], enforce: "overload" })
 *   )
 * )
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const quota: (options: QuotaOptions) => <E, R>(app: HttpApp<E, R>) => HttpApp<E, R | Quota.Quota> =
  internal.quota

/**
 * Options of {@link backpressure}: the `operation` name (or a function of the
 * request), an explicit `monitor` (default: `ThresholdMonitor.ThresholdMonitor` from context),
 * and `json` to also set the throttle attribute in JSON object bodies.
 *
 * @since 0.1.0
 * @category models
 */
export interface BackpressureOptions {
  readonly operation: string | ((request: HttpServerRequest.HttpServerRequest) => string)
  readonly monitor?: ThresholdMonitor.Service | undefined
  readonly json?: boolean | undefined
}

/**
 * Back-pressure for periodic work: records each successful response (status
 * below 400) and its latency in a `ThresholdMonitor`, and while the operation is
 * over a threshold adds `x-sluice-throttle: 1` (and `"throttle": true` to JSON
 * bodies when `json` is set). Failures are not recorded: they are fast and would
 * hide overload.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { ThresholdMonitor } from "@sluice/adaptive"
 * import { Middleware } from "@sluice/http"
 * import { Effect } from "effect"
 * import { HttpRouter, HttpServerResponse } from "effect/http"
 *
 * const monitor = ThresholdMonitor.makeUnsafe({ thresholds: { rate: 6 }, instances: 3 })
 * const Save = HttpRouter.add(
 *   "POST",
 *   "/save",
 *   Effect.succeed(HttpServerResponse.jsonUnsafe({ ok: true })).pipe(
 *     Middleware.backpressure({ operation: "save", monitor, json: true })
 *   )
 * )
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const backpressure: {
  (
    options: BackpressureOptions & { readonly monitor: ThresholdMonitor.Service }
  ): <E, R>(app: HttpApp<E, R>) => HttpApp<E, R>
  (
    options: BackpressureOptions
  ): <E, R>(app: HttpApp<E, R>) => HttpApp<E, R | ThresholdMonitor.ThresholdMonitor>
} = internal.backpressure

/**
 * Sheds optional work: a `ProportionalSampler` (given, or `ProportionalSampler.ProportionalSampler`
 * from context) decides per request; sampled-out requests get `204 No Content`
 * without running the handler.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { Middleware } from "@sluice/http"
 * import { Effect } from "effect"
 * import { HttpRouter, HttpServerResponse } from "effect/http"
 *
 * const Prefetch = HttpRouter.add(
 *   "GET",
 *   "/prefetch",
 *   Effect.succeed(HttpServerResponse.text("data")).pipe(Middleware.sample())
 * )
 * ```
 * @since 0.1.0
 * @category utils
 */
export const sample: {
  (sampler: ProportionalSampler.Service): <E, R>(app: HttpApp<E, R>) => HttpApp<E, R>
  (): <E, R>(app: HttpApp<E, R>) => HttpApp<E, R | ProportionalSampler.ProportionalSampler>
} = internal.sample

/**
 * Sets the throttle attribute of a JSON object body (other bodies are returned
 * unchanged).
 *
 * @since 0.1.0
 * @category utils
 */
export const addJsonAttribute: (
  response: HttpServerResponse.HttpServerResponse,
  attribute: string
) => HttpServerResponse.HttpServerResponse = internal.addJsonAttribute

/**
 * Options of {@link loadShed}: an explicit `shedder` (default: `LoadShedder`
 * from context) and an optional server-side concurrency `limiter` (e.g. with a
 * delay-based limit algorithm), checked after the shedder in place of the shedder's
 * own hard bound (`LoadShedder.Service.bound`). Given only a
 * `limiter`, the middleware needs no `LoadShedder`: it uses one from context
 * when there is one, and the limiter alone otherwise.
 *
 * @since 0.1.0
 * @category models
 */
export interface LoadShedOptions {
  readonly shedder?: LoadShedder.Service | undefined
  readonly limiter?: ConcurrencyLimiter.Limiter | undefined
}

/**
 * Sheds by utilization: the `LoadShedder` admits the request at the current
 * criticality (set it with {@link criticality}, outside) or refuses it, `SHEDDABLE`
 * first and `CRITICAL_PLUS` last, then its hard bound (`LoadShedder.Service.bound`, on
 * by default) holds admitted work to `capacity` at once with a short wait ordered by
 * criticality, so one layer gives both. A refusal (of the shedder or of the
 * limiter) is `503` + `Retry-After` without running the handler, or, for a request
 * over its customer's quota ({@link quota} with `enforce: "overload"`, outside), that
 * quota's `429` and hint; the handler's own failures pass through unchanged. A request waiting in the limiter's queue
 * leaves it when its caller disconnects, and its handler never runs: the wait is
 * interruptible although Effect 4's server runs middleware uninterruptibly.
 *
 * With a deadline ({@link criticality} reads it from the request), a waiter is refused
 * once the deadline has passed (`sluice_http_server_expired_total{stage="queue"}`) or
 * cannot be met (`{stage="unmeetable"}`): its time left is below the limiter's expected
 * service time (`ConcurrencyLimiter.Limiter.serviceTime`, the smoothed time of the work it
 * admitted that succeeded). Both are `503` + `x-sluice-dont-retry`: never retried. A cold
 * limiter has no estimate, so only a passed deadline refuses.
 *
 * A refusal is cheap: what the shedder sheds now (`LoadShedder.Service.shedUnsafe`), and
 * what the bound has no room for now (`ConcurrencyLimiter.Limiter.refuseUnsafe`: a full
 * queue of work served no later), is answered on the spot with one response made once per
 * reason, without a pass through the gates or a span of its own; the counters
 * by reason and criticality count every one.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { LoadShedder } from "@sluice/adaptive"
 * import { Middleware } from "@sluice/http"
 * import { Layer } from "effect"
 * import { HttpRouter, HttpServerResponse } from "effect/http"
 *
 * const Shedding = HttpRouter.middleware((app) => app.pipe(Middleware.loadShed(), Middleware.criticality()), {
 *   global: true
 * })
 * const App = Layer.mergeAll(HttpRouter.add("GET", "/", HttpServerResponse.text("ok")), Shedding).pipe(
 *   Layer.provide(LoadShedder.layer({ capacity: 100 }))
 * )
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const loadShed: {
  (
    options: LoadShedOptions & { readonly shedder: LoadShedder.Service }
  ): <E, R>(app: HttpApp<E, R>) => HttpApp<E, R>
  (
    options: LoadShedOptions & { readonly limiter: ConcurrencyLimiter.Limiter }
  ): <E, R>(app: HttpApp<E, R>) => HttpApp<E, R>
  (options?: LoadShedOptions): <E, R>(app: HttpApp<E, R>) => HttpApp<E, R | LoadShedder.LoadShedder>
} = internal.loadShed

/**
 * Options of {@link degrade}: the degraded `handler` (a cheaper answer: a cached copy, part of
 * a corpus); `when`, which requests may be degraded (default: every one; a request it refuses,
 * or for which it throws, is refused as without `degrade`); `concurrency`, how many degraded
 * answers may run at once (default: the full path's bound, the limiter's limit or the
 * shedder's capacity), beyond which a request is refused as without `degrade`.
 *
 * @since 1.1.0
 * @category models
 */
export interface DegradeOptions<E = never, R = never> {
  readonly handler: HttpApp<E, R>
  readonly when?: ((request: HttpServerRequest.HttpServerRequest) => boolean) | undefined
  readonly concurrency?: number | undefined
}

/**
 * Answers degraded instead of refusing: where {@link loadShed} (directly inside) would refuse
 * a request with `Overloaded` (shed by the `LoadShedder`, or refused by its bound or limiter),
 * `handler` answers it, and the answer carries `x-sluice-degraded: 1`
 * (`Protocol.isDegraded`). Work the shedder admits gets the full answer, so `CRITICAL` is served
 * in full while the server admits `CRITICAL`. A request that cannot be degraded (refused by
 * `when`, or with `concurrency` degraded answers already running) is refused as before: `503`.
 *
 * **Details**
 *
 * - A degraded answer is the `handler`'s response as it is (status included) plus the header:
 *   no `Retry-After`, no throttle flag. A Sluice client returns it as a success and counts it
 *   (`sluice_http_client_degraded_total`), and its limits and throttle learn from it what they
 *   learn from any success; the header is the only overload signal it carries.
 * - Degraded answers run beside the shedder, not in it: they do not count as its load, and
 *   their own bound is `concurrency`. A request whose caller's deadline passed while it waited
 *   is not degraded: nobody would read the answer.
 * - Counted by `sluice_http_server_degraded_total{criticality}`; a request's span, where sampled,
 *   gets `sluice.degraded` (why the full answer was refused). A degraded path that is full adds
 *   to `sluice_http_server_rejected_total` as any refusal.
 * - The handler reads the load it was refused at through `ServerLoad` (`@sluice/core`), like
 *   any admitted handler.
 * - Bad options (an unknown key, a `concurrency` that is not a positive integer) throw a
 *   `RangeError` naming every field when `degrade(options)` is called.
 *
 * **Gotchas**
 *
 * - Put it directly outside `loadShed`, in the same stack: `loadShed` asks the nearest
 *   `degrade` outside it. A `degrade` inside `loadShed` (on a route, under a global `loadShed`)
 *   never sees a refusal, since the refused request never reaches it.
 * - Around a whole router, `handler` answers every route: route it yourself, or let `when`
 *   pick the requests that have a cheaper answer.
 * - The `handler` runs interruptibly (a caller that hangs up ends it), as a route's does.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { LoadShedder } from "@sluice/adaptive"
 * import { Middleware } from "@sluice/http"
 * import { RetryHistogram } from "@sluice/retry"
 * import { Effect, Layer } from "effect"
 * import { HttpRouter, HttpServerResponse } from "effect/http"
 *
 * const fullSearch = Effect.as(Effect.sleep("200 millis"), HttpServerResponse.text("all shards"))
 * const firstShard = Effect.as(Effect.sleep("20 millis"), HttpServerResponse.text("first shard"))
 *
 * const Sluice = HttpRouter.middleware(
 *   (app) =>
 *     app.pipe(
 *       Middleware.loadShed(),
 *       Middleware.degrade({ handler: firstShard, concurrency: 16 }),
 *       Middleware.retryGuard(),
 *       Middleware.mapErrors,
 *       Middleware.criticality()
 *     ),
 *   { global: true }
 * )
 * const App = Layer.mergeAll(HttpRouter.add("GET", "/search", fullSearch), Sluice).pipe(
 *   Layer.provide(Layer.merge(LoadShedder.layer({ capacity: 8 }), RetryHistogram.layer()))
 * )
 * ```
 * @since 1.1.0
 * @category combinators
 */
export const degrade: <E2 = never, R2 = never>(
  options: DegradeOptions<E2, R2>
) => <E, R>(app: HttpApp<E, R>) => HttpApp<E | E2, R | R2> = internal.degrade

/**
 * Options of {@link retryGuard}: an explicit `histogram` (default:
 * `RetryHistogram` from context) and a `trust` policy (default: the verdict of
 * {@link criticality} outside, `Trust.currentCallerTrusted`; without it, nobody
 * is trusted).
 *
 * @since 0.1.0
 * @category models
 */
export interface RetryGuardOptions {
  readonly histogram?: RetryHistogram.Service | undefined
  readonly trust?: Trust.TrustPolicy | undefined
}

/**
 * Records each request's `x-sluice-attempt` (malformed or hostile values count
 * as 0, huge ones are clamped) in a `RetryHistogram`: a trusted caller's in the
 * histogram's decision, an untrusted caller's apart
 * (`RetryHistogram.recordUntrustedUnsafe`), where it changes nobody's answers.
 * While the share of (trusted) retries says the service is overloaded, failures
 * say "don't retry": `5xx` responses get `x-sluice-dont-retry: 1`; an
 * `Overloaded` or `CircuitOpen` the handler fails with becomes `DontRetry {
 * reason: "server" }` (use {@link mapErrors} outside); any other failure or
 * defect escaping the handler is turned into its response here (as the server
 * would: 500 for a plain error), with the header on a 5xx, and the cause
 * reported to the `ErrorReporter`s as the server reports it.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { Middleware, Trust } from "@sluice/http"
 * import { RetryHistogram } from "@sluice/retry"
 * import { Layer } from "effect"
 * import { HttpRouter, HttpServerResponse } from "effect/http"
 *
 * const Guard = HttpRouter.middleware(
 *   (app) => app.pipe(Middleware.retryGuard({ trust: Trust.loopback }), Middleware.mapErrors),
 *   { global: true }
 * )
 * const App = Layer.mergeAll(HttpRouter.add("GET", "/", HttpServerResponse.text("ok")), Guard).pipe(
 *   Layer.provide(RetryHistogram.layer({ threshold: 0.1 }))
 * )
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const retryGuard: {
  (
    options: RetryGuardOptions & { readonly histogram: RetryHistogram.Service }
  ): <E, R>(app: HttpApp<E, R>) => HttpApp<E | Errors.DontRetry, R>
  (
    options?: RetryGuardOptions
  ): <E, R>(app: HttpApp<E, R>) => HttpApp<E | Errors.DontRetry, R | RetryHistogram.RetryHistogram>
} = internal.retryGuard

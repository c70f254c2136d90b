/**
 * Tiered per-client quotas.
 *
 * `Quota.check(client, { cost })` counts one request (or `cost` units) against
 * every tier of the client's plan (from {@link QuotaConfig}) in the configured
 * {@link QuotaStore}, and answers with a {@link Decision}: allowed or not, and per
 * tier its limit, remaining units, reset time and `retryAfter` — what an HTTP
 * layer needs for `RateLimit` and `Retry-After` headers. A request passes only if
 * every tier passes; a denied request consumes nothing.
 *
 * **Details**
 *
 * - Costs are whole units: cost 0 is a peek (decided as one unit, nothing consumed,
 *   like {@link get}); a negative or fractional cost fails with `InvalidOptions`; a
 *   cost above a tier's capacity can never pass and is denied with `retryAfterMs`
 *   `Infinity` (`QuotaExceeded.retryAfter` is `Duration.infinity`: "never").
 * - Decisions are exact: integer arithmetic in whole milliseconds of the `Clock`, the
 *   same in the memory and Redis stores (the rules are `@sluice/kernel`'s quota modules).
 * - Client ids longer than `maxClientIdLength` (256) are stored as a prefix, `#` and
 *   their SHA-256 (a string of its own, which keeps nothing of the caller's id alive),
 *   so no id grows the store unboundedly.
 * - A remote store (Redis) is called with a deadline: 15 ms by default, a hard bound
 *   (Quota Minder's: a check never adds more than the deadline to a request, beyond
 *   how late this process's own timers run); the Redis store decides in one round trip.
 *   Deadlines and latencies are timed on the `Clock`'s monotonic time, so `TestClock`
 *   drives them.
 * - Opt in to the learned deadline by setting `maxDeadline` above `deadline` (e.g. 50 ms
 *   and 1 second): a store that answers in call order (one Redis connection) and keeps
 *   answering other checks is slow, not gone, and a check then waits for its own answer
 *   up to `maxDeadline`, so a saturated host does not hand quota decisions to the
 *   failure mode.
 * - When the call misses its deadline, fails, or the breaker is open, the `mode`
 *   decides: `fallback` (the default: decide with a per-instance memory store on the
 *   same plans scaled by `fallbackShare`, like rate-limiter-flexible's insurance
 *   limiter), `fail-open` (allow) or `fail-closed` (deny). The breaker opens only on
 *   sustained failure (see {@link QuotaOptions}), and a deadline missed because this
 *   process was not running (a CPU stall) is not held against the store.
 * - Metrics (Effect `Metric`s, updated in the context the service is built in):
 *   `sluice_quota_check_latency_ms`, `sluice_quota_allowed_total{source}`,
 *   `sluice_quota_denied_total{tier,source}` (`source`: `store` or the failure mode that decided), `sluice_quota_fail_open_total`,
 *   `sluice_quota_fail_closed_total`, `sluice_quota_fallback_total`,
 *   `sluice_quota_store_failures_total{reason}`, `sluice_quota_refunds_total`,
 *   `sluice_quota_waited_total`, `sluice_quota_breaker_state`. A decision by the
 *   failure mode runs in the span `sluice.quota.store_failure`.
 *
 * - A server may enforce plans only in overload: `Middleware.quota({ enforce: "overload" })`
 *   (`@sluice/http`) runs a request over its plan marked `Criticality.currentOverQuota`, so the
 *   server's `LoadShedder` and `ConcurrencyLimiter` shed it first within its criticality level
 *   and serve it while there is room; an admitted over-plan request is charged with
 *   {@link penalty} (its cost, down to empty at most), so longer tiers count what it used.
 *
 * **Gotchas**
 *
 * - A store failure never surfaces as an error or a defect of `check`: it is a
 *   decision with `source` `"fallback"`, `"fail-open"` or `"fail-closed"`. Only
 *   `reward`, `penalty`, `block` and `reset` (and plan writes to Redis) fail with
 *   `QuotaStoreError`.
 * - The hard bound is the default: a Redis answering slowly under load sends checks
 *   to the failure mode, which cannot be exact. Set `maxDeadline` when the quota is a
 *   contract and a check may wait.
 * - Interrupting a check does not recall its store call: units the store counts for
 *   it may stay counted.
 *
 * @example
 * ```ts
 * import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
 * import { Effect, Layer } from "effect"
 *
 * const QuotaLive = Quota.layer().pipe(
 *   Layer.provide(QuotaStore.layerMemory()),
 *   Layer.provide(
 *     QuotaConfig.layer({
 *       default: {
 *         tiers: [
 *           { name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 },
 *           { name: "count", algorithm: "sliding-window", limit: 5000, period: "1 hour" }
 *         ]
 *       }
 *     })
 *   )
 * )
 *
 * const program = Effect.gen(function* () {
 *   const decision = yield* Quota.check("acme")
 *   return decision.allowed ? "ok" : `retry in ${decision.retryAfterMs} ms`
 * }).pipe(Effect.provide(QuotaLive))
 * Effect.runPromise(program).then(console.log) // prints: ok
 * ```
 * @since 0.1.0
 */
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { QuotaExceeded } from "@sluice/core/Errors"
import type * as QuotaDecision from "@sluice/kernel/quota/QuotaDecision"
import type * as KernelOptions from "@sluice/kernel/quota/QuotaOptions"
import * as internal from "./internal/quota.js"
import type { InvalidOptions } from "@sluice/core/Options"
import type { QuotaStoreError } from "./QuotaStore.js"
import type * as CircuitBreaker from "@sluice/core/CircuitBreaker"
import { QuotaConfig } from "./QuotaConfig.js"
import { QuotaStore } from "./QuotaStore.js"

/**
 * What happens when the store fails or misses its deadline.
 *
 * @since 0.1.0
 * @category models
 */
export type FailureMode = KernelOptions.FailureMode

/**
 * Where a decision came from: the store, or one of the failure modes.
 *
 * @since 0.1.0
 * @category models
 */
export type DecisionSource = QuotaDecision.Source

/**
 * The answer to a check. `deniedBy` is the first tier that denied; `retryAfterMs`
 * is the longest wait among denying tiers (0 when allowed).
 *
 * @since 0.1.0
 * @category models
 */
export interface Decision extends QuotaDecision.Decision {}

/**
 * @since 0.1.0
 * @category models
 */
export interface CheckOptions {
  readonly cost?: number | undefined
}

/**
 * Options of {@link withQuota}: `cost` and `maxWait` (default 0: do not wait; a duration that is
 * negative, not finite or not a duration fails with `InvalidOptions`).
 *
 * @since 0.2.0
 * @category models
 */
export interface WaitOptions extends CheckOptions {
  readonly maxWait?: Duration.Input | undefined
}

/**
 * Options:
 *
 * - `mode` (default `"fallback"`): what decides when the store fails.
 * - `deadline` of a store call (default 15 ms): with the default `maxDeadline`,
 *   a hard bound — every check is decided by then (the timer fires a third of
 *   the deadline, at most 5 ms, early, so the failure mode decides by the
 *   deadline even when the timer comes back a few ms late; a process that does
 *   not run cannot fire its timer: the bound is the deadline plus that delay).
 * - `maxDeadline` (default: `deadline`, never below it): set it above `deadline`
 *   to opt in to the learned deadline. For a store whose answers come in call
 *   order (`QuotaStore.Store.ordered`: Redis on one connection, not a cluster),
 *   a check then waits past its deadline while the store keeps answering other
 *   checks — it is working through a backlog, as on a saturated host — until it
 *   has been silent for `deadline` (or for twice the longest silence it answered
 *   after in the last 5–10 seconds, if longer), or `maxDeadline` after the check
 *   began; and after this process stalls for 10 ms or more, no check in flight
 *   expires for as long again. `{ deadline: "50 millis", maxDeadline: "1 second" }`
 *   kept eight saturated processes exact where the hard 15 ms bound let the
 *   failure mode decide (the package README, "Choosing a deadline").
 * - `breaker`: opens on sustained failure only — a failure share of at least
 *   `failureRatio` (0.5) over `window` (1 second) with at least `minimumCalls`
 *   (20), or `consecutiveFailures` (5) in a row spread over at least
 *   `minFailureSpan` (250 ms) — so one stall of Redis or of the process never
 *   opens it; open for `openFor` (500 ms, the probe interval), then
 *   `halfOpenProbes` (1) checks probe the store and one success closes it.
 * - `failClosedRetryAfter` (1 second).
 * - `fallbackShare` (default 1): the share of every plan's limit and burst the
 *   local fallback grants per instance; with N instances, `1 / N` keeps the
 *   whole fleet within the plan while Redis is away, 1 keeps every client
 *   served (at most N times its plan) — bounded, unlike `fail-open`, and never
 *   denying a client within its quota, unlike `fail-closed`.
 * - `fallbackMaxClients` (100,000) bounds the fallback's memory.
 * - `maxClientIdLength` (256, at least 80).
 *
 * @since 0.1.0
 * @category models
 */
export interface QuotaOptions extends KernelOptions.Input<Duration.Input> {}

/**
 * A quota event, published on the service's `events` stream: `Denied` when a check
 * denies a client (the tier that denied, the wait, what decided, when).
 * Admissions publish nothing. Beside the metrics `sluice_quota_denied_total` (by tier and source).
 *
 * @example
 * ```ts
 * // snippet: compile-only — needs the Quota layer the app provides
 * import { Quota } from "@sluice/quota"
 * import { Effect, Stream } from "effect"
 *
 * const logDenials = Effect.flatMap(Quota.Quota, (quota) =>
 *   quota.events.pipe(Stream.runForEach((event) => Effect.log(`${event.client} denied by ${event.tier}`)))
 * )
 * ```
 * @since 0.2.0
 * @category models
 */
export type Event = Denied

/**
 * A check denied `client`: the tier it is reported under (the first that denied), the wait,
 * what decided, and when (`at`, epoch millis from Effect's `Clock`).
 *
 * @since 0.2.0
 * @category models
 */
export interface Denied extends QuotaDecision.Denied {}

/**
 * The quota service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly check: (client: string, options?: CheckOptions) => Effect.Effect<Decision, InvalidOptions>
  readonly get: (client: string) => Effect.Effect<Decision>
  readonly reward: (client: string, units: number) => Effect.Effect<void, InvalidOptions | QuotaStoreError>
  readonly penalty: (client: string, units: number) => Effect.Effect<void, InvalidOptions | QuotaStoreError>
  readonly block: (
    client: string,
    duration: Duration.Input
  ) => Effect.Effect<void, InvalidOptions | QuotaStoreError>
  readonly reset: (client: string) => Effect.Effect<void, QuotaStoreError>
  readonly guard: {
    (
      client: string,
      options?: CheckOptions
    ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | QuotaExceeded | InvalidOptions, R>
    <A, E, R>(
      self: Effect.Effect<A, E, R>,
      client: string,
      options?: CheckOptions
    ): Effect.Effect<A, E | QuotaExceeded | InvalidOptions, R>
  }
  readonly withQuota: {
    (
      client: string,
      options?: WaitOptions
    ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | QuotaExceeded | InvalidOptions, R>
    <A, E, R>(
      self: Effect.Effect<A, E, R>,
      client: string,
      options?: WaitOptions
    ): Effect.Effect<A, E | QuotaExceeded | InvalidOptions, R>
  }
  /** The id a client is stored under: itself, or (above `maxClientIdLength`) a prefix and its SHA-256. */
  readonly storedId: (client: string) => string
  readonly breaker: CircuitBreaker.Service | undefined
  readonly mode: FailureMode
  readonly deadline: Duration.Duration
  /**
   * The longest a check waits for a store that is still answering other checks: `deadline` (a
   * hard bound) unless the learned deadline was opted in to.
   */
  readonly maxDeadline: Duration.Duration
  /** Denials from the moment the stream is run (a subscriber more than 256 behind loses the oldest). */
  readonly events: Stream.Stream<Event>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class Quota extends Context.Service<Quota, Service>()("@sluice/quota/Quota") {}

/**
 * Makes the service from a store and a configuration. The scope owns the fiber
 * that enforces store deadlines.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: QuotaOptions = {}
): Effect.Effect<Service, InvalidOptions, QuotaStore | QuotaConfig | Scope.Scope> =>
  Effect.flatMap(Effect.all([QuotaStore, QuotaConfig]), ([store, config]) =>
    internal.make(store, config, options)
  )

/**
 * The quota service as a layer over a {@link QuotaStore} and a {@link QuotaConfig}.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { Quota, QuotaConfig } from "@sluice/quota"
 * import * as IoRedisClient from "@sluice/core/IoRedisClient"
 * import * as IoRedis from "@sluice/quota/IoRedis"
 * import { Layer } from "effect"
 *
 * // Redis has 15 ms to decide a check, a hard bound (`maxDeadline` defaults to the deadline);
 * // a check it has not decided by then is allowed
 * const QuotaLive = Quota.layer({ mode: "fail-open", deadline: "15 millis" }).pipe(
 *   Layer.provide(IoRedis.layerStoreShared()),
 *   Layer.provide(
 *     QuotaConfig.layer({
 *       default: { tiers: [{ name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 }] }
 *     })
 *   ),
 *   Layer.provide(IoRedisClient.layer())
 * )
 *
 * // or the learned deadline: wait for a Redis that keeps answering other checks, up to 1 second
 * const ExactQuota = Quota.layer({ deadline: "50 millis", maxDeadline: "1 second" })
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: QuotaOptions = {}
): Layer.Layer<Quota, InvalidOptions, QuotaStore | QuotaConfig> => Layer.effect(Quota, make(options))

/**
 * {@link layer} with the options read from a `Config` (fails with `ConfigError` or
 * `InvalidOptions`).
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import { Quota } from "@sluice/quota"
 * import { Config } from "effect"
 *
 * const QuotaLive = Quota.layerConfig(
 *   Config.all({ mode: Config.Literals(["fallback", "fail-open", "fail-closed"], "QUOTA_MODE") })
 * )
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<QuotaOptions>
): Layer.Layer<Quota, InvalidOptions | Config.ConfigError, QuotaStore | QuotaConfig> =>
  Layer.effect(Quota, Effect.flatMap(config, make))

/**
 * Counts a request (or `cost` units) against every tier of the client's plan.
 * Fails only on an invalid cost (`InvalidOptions`); store failures are decided by
 * the failure mode.
 *
 * @example
 * ```ts
 * // snippet: compile-only — needs the Quota layer the app provides
 * import { Quota } from "@sluice/quota"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const decision = yield* Quota.check("acme", { cost: 1 })
 *   if (!decision.allowed) console.log(`retry in ${decision.retryAfterMs} ms (tier ${decision.deniedBy?.tier})`)
 * })
 * ```
 * @since 0.1.0
 * @category utils
 */
export const check = (
  client: string,
  options?: CheckOptions
): Effect.Effect<Decision, InvalidOptions, Quota> =>
  Effect.flatMap(Quota, (quota) => quota.check(client, options))

/**
 * A client's state without consuming: the decision a request of one unit would get now
 * (rate-limiter-flexible's `get`). The same as `check` with cost 0.
 *
 * @example
 * ```ts
 * // snippet: compile-only — needs the Quota layer the app provides
 * import { Quota } from "@sluice/quota"
 * import { Effect } from "effect"
 *
 * const remaining = Effect.map(Quota.get("acme"), (d) => d.tiers.map((t) => t.remaining))
 * ```
 * @since 0.2.0
 * @category getters
 */
export const get = (client: string): Effect.Effect<Decision, never, Quota> =>
  Effect.flatMap(Quota, (quota) => quota.get(client))

/**
 * Gives `units` back to every tier of a client (a refund), never beyond full.
 *
 * @example
 * ```ts
 * // snippet: compile-only — needs the Quota layer the app provides
 * import { Quota } from "@sluice/quota"
 *
 * const refund = Quota.reward("acme", 1)
 * ```
 * @since 0.2.0
 * @category combinators
 */
export const reward = (
  client: string,
  units: number
): Effect.Effect<void, InvalidOptions | QuotaStoreError, Quota> =>
  Effect.flatMap(Quota, (quota) => quota.reward(client, units))

/**
 * Takes `units` more from every tier of a client (a penalty), at most down to empty.
 *
 * @example
 * ```ts
 * // snippet: compile-only — needs the Quota layer the app provides
 * import { Quota } from "@sluice/quota"
 *
 * const fine = Quota.penalty("acme", 5)
 * ```
 * @since 0.2.0
 * @category combinators
 */
export const penalty = (
  client: string,
  units: number
): Effect.Effect<void, InvalidOptions | QuotaStoreError, Quota> =>
  Effect.flatMap(Quota, (quota) => quota.penalty(client, units))

/**
 * Blocks a client for a duration (whole milliseconds, rounded up): every check is denied with
 * the time left as `retryAfter`, and nothing is counted. A plan's `blockFor` does the same
 * automatically after a denial, and that denial already reports the block as its `retryAfter`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — needs the Quota layer the app provides
 * import { Quota } from "@sluice/quota"
 *
 * const ban = Quota.block("mallory", "10 minutes")
 * ```
 * @since 0.2.0
 * @category combinators
 */
export const block = (
  client: string,
  duration: Duration.Input
): Effect.Effect<void, InvalidOptions | QuotaStoreError, Quota> =>
  Effect.flatMap(Quota, (quota) => quota.block(client, duration))

/**
 * Forgets a client: its next check starts with full tiers and no block (rate-limiter-flexible's
 * `delete`).
 *
 * @example
 * ```ts
 * // snippet: compile-only — needs the Quota layer the app provides
 * import { Quota } from "@sluice/quota"
 *
 * const forgive = Quota.reset("acme")
 * ```
 * @since 0.2.0
 * @category combinators
 */
export const reset = (client: string): Effect.Effect<void, QuotaStoreError, Quota> =>
  Effect.flatMap(Quota, (quota) => quota.reset(client))

/**
 * Runs an effect once the client's quota admits it, waiting (with `Effect.sleep`, so
 * `TestClock` drives it) for a permit up to `maxWait`, like resilience4j's RateLimiter; fails
 * with `QuotaExceeded` at once when no permit can come within the bound (the failing form is
 * {@link guard}).
 *
 * @example
 * ```ts
 * // snippet: compile-only — needs the Quota layer the app provides
 * import { Quota } from "@sluice/quota"
 * import { Effect } from "effect"
 *
 * const paced = Effect.succeed("sent").pipe(Quota.withQuota("mailer", { maxWait: "2 seconds" }))
 * ```
 * @since 0.2.0
 * @category combinators
 */
export const withQuota: {
  (
    client: string,
    options?: WaitOptions
  ): <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | QuotaExceeded | InvalidOptions, R | Quota>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    client: string,
    options?: WaitOptions
  ): Effect.Effect<A, E | QuotaExceeded | InvalidOptions, R | Quota>
} = dual(
  (args) => Effect.isEffect(args[0]),
  <A, E, R>(self: Effect.Effect<A, E, R>, client: string, options?: WaitOptions) =>
    Effect.flatMap(Quota, (quota) => quota.withQuota(self, client, options))
)

/**
 * Runs an effect only if the client's quota admits it; otherwise fails with
 * `QuotaExceeded` naming the denying tier, its limit, remaining and `retryAfter`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — needs the Quota layer the app provides
 * import { Quota } from "@sluice/quota"
 * import { Effect } from "effect"
 *
 * const handler = Effect.succeed("ok").pipe(Quota.guard("acme"))
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const guard: {
  (
    client: string,
    options?: CheckOptions
  ): <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | QuotaExceeded | InvalidOptions, R | Quota>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    client: string,
    options?: CheckOptions
  ): Effect.Effect<A, E | QuotaExceeded | InvalidOptions, R | Quota>
} = dual(
  (args) => Effect.isEffect(args[0]),
  <A, E, R>(self: Effect.Effect<A, E, R>, client: string, options?: CheckOptions) =>
    Effect.flatMap(Quota, (quota) => quota.guard(self, client, options))
)

/**
 * The `QuotaExceeded` error for a denied decision.
 *
 * @since 0.1.0
 * @category utils
 */
export const toQuotaExceeded: (decision: Decision) => QuotaExceeded = internal.toQuotaExceeded

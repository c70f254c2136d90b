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
 * A remote store (Redis) is called with a deadline (15 ms by default) through a
 * circuit breaker. When the call misses the deadline, fails, or the breaker is
 * open, the `mode` decides: `fail-open` (default: allow, and count it),
 * `fail-closed` (deny) or `fallback` (decide with a local memory store using the
 * same plans). A store failure never surfaces as an error or a defect.
 *
 * Metrics: `sluice_quota_check_latency_ms`, `sluice_quota_allowed_total`,
 * `sluice_quota_denied_total{tier}`, `sluice_quota_fail_open_total`,
 * `sluice_quota_fail_closed_total`, `sluice_quota_fallback_total`,
 * `sluice_quota_store_failures_total{reason}`, `sluice_quota_breaker_state`.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { QuotaExceeded } from "./Errors.js"
import * as internal from "./internal/quota.js"
import type { InvalidOptions } from "./Options.js"
import { QuotaConfig } from "./QuotaConfig.js"
import { QuotaStore } from "./QuotaStore.js"

/**
 * What happens when the store fails or misses its deadline.
 *
 * @since 0.1.0
 */
export type FailureMode = internal.FailureMode

/**
 * Where a decision came from: the store, or one of the failure modes.
 *
 * @since 0.1.0
 */
export type DecisionSource = internal.DecisionSource

/**
 * The answer to a check. `deniedBy` is the first tier that denied; `retryAfterMs`
 * is the longest wait among denying tiers (0 when allowed).
 *
 * @since 0.1.0
 */
export type Decision = internal.Decision

/**
 * @since 0.1.0
 */
export type CheckOptions = internal.CheckOptions

/**
 * Options: `mode` (default `"fail-open"`), `deadline` of a store call (default
 * 15 ms; it bounds the whole check, so its timer fires up to 1 ms early and the
 * failure mode decides by the deadline), `breaker` (`consecutiveFailures` 5, `openFor` 1 second — the probe
 * interval —, `halfOpenProbes` 1), `failClosedRetryAfter` (1 second) and
 * `fallbackMaxClients` (100,000).
 *
 * @since 0.1.0
 */
export const QuotaOptions: Schema.Schema<any, internal.QuotaOptions> = internal.QuotaOptions

/**
 * @since 0.1.0
 */
export type QuotaOptions = internal.QuotaOptions

/**
 * The quota service.
 *
 * @since 0.1.0
 */
export interface Service extends internal.QuotaService {}

/**
 * @since 0.1.0
 */
export class Quota extends Context.Tag("@sluice/core/Quota")<Quota, Service>() {}

/**
 * Makes the service from a store and a configuration. The scope owns the fiber
 * that enforces store deadlines.
 *
 * @since 0.1.0
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
 * import { Quota, QuotaConfig, QuotaStore } from "@sluice/core"
 * import { Layer } from "effect"
 *
 * const QuotaLive = Quota.layer({ mode: "fail-open", deadline: "15 millis" }).pipe(
 *   Layer.provide(QuotaStore.layerMemory()),
 *   Layer.provide(
 *     QuotaConfig.layer({
 *       default: { tiers: [{ name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 }] }
 *     })
 *   )
 * )
 * ```
 * @since 0.1.0
 */
export const layer = (
  options: QuotaOptions = {}
): Layer.Layer<Quota, InvalidOptions, QuotaStore | QuotaConfig> => Layer.scoped(Quota, make(options))

/**
 * Counts a request (or `cost` units) against every tier of the client's plan.
 * Never fails: store failures are decided by the failure mode.
 *
 * @example
 * ```ts
 * import { Quota } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const decision = yield* Quota.check("acme", { cost: 1 })
 *   if (!decision.allowed) console.log(`retry in ${decision.retryAfterMs} ms (tier ${decision.deniedBy?.tier})`)
 * })
 * ```
 * @since 0.1.0
 */
export const check = (client: string, options?: CheckOptions): Effect.Effect<Decision, never, Quota> =>
  Effect.flatMap(Quota, (quota) => quota.check(client, options))

/**
 * Runs an effect only if the client's quota admits it; otherwise fails with
 * `QuotaExceeded` naming the denying tier, its limit, remaining and `retryAfter`.
 *
 * @example
 * ```ts
 * import { Quota } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const handler = Effect.succeed("ok").pipe(Quota.guard("acme"))
 * ```
 * @since 0.1.0
 */
export const guard: {
  (
    client: string,
    options?: CheckOptions
  ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | QuotaExceeded, R | Quota>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    client: string,
    options?: CheckOptions
  ): Effect.Effect<A, E | QuotaExceeded, R | Quota>
} = dual(
  (args) => Effect.isEffect(args[0]),
  <A, E, R>(self: Effect.Effect<A, E, R>, client: string, options?: CheckOptions) =>
    Effect.flatMap(Quota, (quota) => quota.guard(self, client, options))
)

/**
 * The `QuotaExceeded` error for a denied decision.
 *
 * @since 0.1.0
 */
export const toQuotaExceeded: (decision: Decision) => QuotaExceeded = internal.toQuotaExceeded

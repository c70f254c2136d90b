/**
 * Quota plans: which tiers count a client, and how to change them while running.
 *
 * A plan is a non-empty list of tiers; a request passes only if every tier passes.
 * Each tier is a limit per period with an algorithm:
 *
 * - `gcra`: a smooth rate of `limit` per `period` with a bucket of `burst` units
 *   (default `limit`), the token-bucket equivalent;
 * - `sliding-window`: about `limit` units within any moving `period`, counted with
 *   the sliding-window counter (as Cloudflare's and Redis's rate limiters do): two
 *   fixed windows of `period` aligned to the clock, the count of the current one
 *   plus that of the previous one weighted by the share of it the moving window
 *   still covers (`previous × (period − elapsed) / period + current`). O(1) state
 *   per client and tier; exact while traffic is steady, an approximation (never
 *   more than the previous window's count off) when it is bursty.
 *
 * `QuotaConfig` holds a default plan and per-client overrides. Plans are validated
 * by Schema: an invalid plan fails with `InvalidOptions` naming the field, and the
 * plan in force stays. A Redis-backed source lives in `@sluice/quota/Redis` (over Effect's
 * `Redis` service) and `@sluice/quota/IoRedis` (over ioredis).
 *
 * @since 0.1.0
 */
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import * as internal from "./internal/quotaConfig.js"
import * as plan from "./internal/quotaPlan.js"
import type * as QuotaPlan from "@sluice/kernel/quota/QuotaPlan"
import type { InvalidOptions } from "@sluice/core/Options"
import type { QuotaStoreError } from "./QuotaStore.js"

/**
 * The algorithm of a tier.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Algorithm: Schema.Literals<readonly ["gcra", "sliding-window"]> = plan.Algorithm

/**
 * @since 0.1.0
 * @category models
 */
export type Algorithm = plan.Algorithm

/**
 * One tier: `{ name, algorithm, limit, period, burst? }`. `period` accepts
 * milliseconds, a `Duration` or a string such as `"1 hour"`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Tier = plan.Tier

/**
 * @since 0.1.0
 * @category models
 */
export type Tier = plan.Tier

/**
 * A plan: `{ tiers: [tier, ...] }` with unique tier names.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { QuotaConfig } from "@sluice/quota"
 *
 * const plan: QuotaConfig.PlanInput = {
 *   tiers: [
 *     { name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 },
 *     { name: "count", algorithm: "sliding-window", limit: 5000, period: "1 hour" }
 *   ]
 * }
 * ```
 * @since 0.1.0
 * @category schemas
 */
export const Plan = plan.Plan

/**
 * @since 0.1.0
 * @category models
 */
export type Plan = plan.Plan

/**
 * A plan as written in configuration or JSON.
 *
 * @since 0.1.0
 * @category models
 */
export type PlanInput = plan.PlanInput

/**
 * A plan decoded from a JSON string (the Redis source stores plans this way).
 *
 * @since 0.1.0
 * @category schemas
 */
export const PlanFromJson = plan.PlanFromJson

/**
 * A plan flattened for the stores' hot path (the kernel's `quota/QuotaPlan` compiled plan, with the
 * plan as decoded).
 *
 * @since 0.1.0
 * @category models
 */
export interface CompiledPlan extends QuotaPlan.CompiledPlan {
  readonly plan: Plan
  readonly tiers: ReadonlyArray<CompiledTier>
}

/**
 * A tier flattened to plain integers (see the kernel's `quota/QuotaPlan`): `capacity` (gcra: burst;
 * sliding-window: the limit), `periodMs`, `capacityPeriod`, `windowMs` (the window the limit is
 * counted over, as `RateLimit-Policy`'s `w`), and where its state starts in a client's state.
 *
 * @since 0.1.0
 * @category models
 */
export interface CompiledTier extends QuotaPlan.CompiledTier {}

/**
 * Flattens a decoded plan for the stores.
 *
 * @since 0.1.0
 * @category utils
 */
export const compile: (plan: Plan) => CompiledPlan = plan.compile

/**
 * The plans in force. `planFor` is synchronous because it sits on the hot path of
 * every check; updates take effect on the client's next check.
 *
 * `E` is how a write fails to reach where the plans are stored: `never` for plans held in
 * this process ({@link make}); `QuotaStoreError` for plans stored in Redis
 * (`@sluice/quota/Redis`, `@sluice/quota/IoRedis`), and for the service behind the {@link QuotaConfig} tag, which may be
 * either. A write that fails takes effect nowhere, not even here.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service<E = QuotaStoreError> {
  /** The compiled plan of a client (its override, or the default). */
  readonly planFor: (client: string) => CompiledPlan
  readonly plan: (client: string) => Effect.Effect<Plan>
  readonly defaultPlan: Effect.Effect<Plan>
  readonly overrides: Effect.Effect<ReadonlyMap<string, Plan>>
  /** Replaces the default plan (of every instance, when stored in Redis); an invalid plan fails and the previous one stays. */
  readonly setDefault: (plan: PlanInput | Plan) => Effect.Effect<void, InvalidOptions | E>
  /** Sets a client's plan; an invalid plan fails and the previous one stays. */
  readonly setPlan: (client: string, plan: PlanInput | Plan) => Effect.Effect<void, InvalidOptions | E>
  /** Removes a client's override: it falls back to the default plan. */
  readonly removePlan: (client: string) => Effect.Effect<void, E>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class QuotaConfig extends Context.Service<QuotaConfig, Service>()("@sluice/quota/QuotaConfig") {}

/**
 * Options: a default plan and per-client overrides.
 *
 * @since 0.1.0
 * @category models
 */
export interface QuotaConfigOptions {
  readonly default: PlanInput | Plan
  readonly clients?: Readonly<Record<string, PlanInput | Plan>> | undefined
}

/**
 * Makes an in-process configuration.
 *
 * @example
 * ```ts
 * // snippet: compile-only — a fragment of a program, nothing to print
 * import { QuotaConfig } from "@sluice/quota"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const config = yield* QuotaConfig.make({
 *     default: { tiers: [{ name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 }] }
 *   })
 *   yield* config.setPlan("acme", { tiers: [{ name: "spike", algorithm: "gcra", limit: 100, period: "1 second" }] })
 * })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options: QuotaConfigOptions) => Effect.Effect<Service<never>, InvalidOptions> =
  internal.make

/**
 * A layer holding plans in this process.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: QuotaConfigOptions): Layer.Layer<QuotaConfig, InvalidOptions> =>
  Layer.effect(QuotaConfig, internal.make(options))

/**
 * {@link layer} with the options read from a `Config` (fails with `ConfigError` or
 * `InvalidOptions`), e.g. a default plan from JSON with `Config.schema(QuotaConfig.PlanFromJson, "PLAN")`.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<QuotaConfigOptions>
): Layer.Layer<QuotaConfig, InvalidOptions | Config.ConfigError> =>
  Layer.effect(QuotaConfig, Effect.flatMap(config, internal.make))

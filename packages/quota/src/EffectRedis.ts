/**
 * Quotas in Redis over Effect's own `Redis` service (`effect/persistence/Redis`, e.g.
 * `NodeRedis.layer` from `@effect/platform-node`, over node-redis): the quota store and the plan
 * store of `@sluice/quota/Redis` on the connection the app already holds, so it opens no second
 * one, and needs no `ioredis` installed: this module never loads it.
 *
 * The store is the same as over ioredis: the same single `EVALSHA` per check (sent again with
 * `EVAL` when Redis answers `NOSCRIPT`), on the same keys (`prefix{client}`), with the same
 * script, so it decides as the ioredis store and the memory store do, and instances on either
 * client can share one Redis. The plan store keeps the overrides in a hash at `key` and the
 * default, once set, at `${key}:default`, as over ioredis (see `@sluice/quota/Redis` for both).
 *
 * **Gotchas**
 *
 * - A restarted Redis is noticed by its first `NOSCRIPT` (that check sends the script with
 *   `EVAL`), not by a reconnection event; node-redis' own command timeouts, if any, still apply
 *   to checks (`Quota`'s deadline bounds them anyway).
 * - node-redis writes every command of one event-loop turn in one write: the store asks `Quota`
 *   to resume answered checks at most 32 per turn (`QuotaStore.Store.resumesPerTurn`), so many
 *   checks in flight leave in a few writes, not one batch.
 * - `SET … KEEPTTL` needs Redis 6.0 or later.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redis from "effect/persistence/Redis"
import type * as Scope from "effect/Scope"
import type { InvalidOptions } from "@sluice/core/Options"
import * as planStore from "./internal/redisPlanStore.js"
import * as internal from "./internal/redisTransportStore.js"
import { QuotaConfig } from "./QuotaConfig.js"
import type * as QuotaConfigNs from "./QuotaConfig.js"
import { QuotaStore } from "./QuotaStore.js"
import type * as QuotaStoreNs from "./QuotaStore.js"

/**
 * Store options: a key prefix (default `sluice:quota:`). The connection is Effect's `Redis`
 * from context.
 *
 * @since 1.0.0
 * @category models
 */
export interface StoreOptions {
  readonly prefix?: string | undefined
}

/**
 * Options of the plan store: a hash `key` (default `sluice:quota:plans`) mapping client → plan
 * JSON, the default plan, and how often to refresh the local cache (default 5 seconds).
 * `default` is the default plan until one is stored in Redis (`setDefault` stores it at
 * `${key}:default`, as JSON). The connection is Effect's `Redis` from context.
 *
 * @since 1.0.0
 * @category models
 */
export interface PlanStoreOptions extends planStore.ConfigOptions {}

/**
 * Makes the Redis store on Effect's own `Redis` service (`effect/persistence/Redis`), e.g. the
 * one `NodeRedis.layer` from `@effect/platform-node` provides: the app's connection, no second
 * one. Same script, keys and decisions as `@sluice/quota/Redis`'s `makeStore`.
 *
 * @since 1.0.0
 * @category constructors
 */
export const makeStore = (
  options: StoreOptions = {}
): Effect.Effect<QuotaStoreNs.Store, never, Redis.Redis> => internal.makeStoreEffect(options.prefix)

/**
 * The Redis store as a layer on Effect's own `Redis` service (see {@link makeStore}).
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { NodeRedis } from "@effect/platform-node"
 * import { Quota, QuotaConfig } from "@sluice/quota"
 * import * as EffectRedis from "@sluice/quota/EffectRedis"
 * import { Layer } from "effect"
 *
 * // the quota store on the app's NodeRedis connection (node-redis): no ioredis, no second connection
 * const QuotaLive = Quota.layer({ deadline: "15 millis" }).pipe(
 *   Layer.provide(EffectRedis.layerStore({ prefix: "sluice:quota:" })),
 *   Layer.provide(
 *     QuotaConfig.layer({
 *       default: { tiers: [{ name: "count", algorithm: "sliding-window", limit: 5000, period: "1 hour" }] }
 *     })
 *   ),
 *   Layer.provide(NodeRedis.layer({ url: "redis://127.0.0.1:6379" }))
 * )
 * ```
 * @since 1.0.0
 * @category layers
 */
export const layerStore = (options: StoreOptions = {}): Layer.Layer<QuotaStore, never, Redis.Redis> =>
  Layer.effect(QuotaStore, makeStore(options))

/**
 * The plan store on Effect's own `Redis` service (e.g. `NodeRedis`): a {@link QuotaConfig}
 * whose plans live in Redis, so every instance sees the same plans: the overrides in a hash at
 * `key`, and the default, once `setDefault` has stored one, at `${key}:default` (until then, and
 * whenever that key is deleted, each instance uses its `default` option). Reads are served from
 * a local cache refreshed in the background; a plan in Redis that does not decode is logged
 * (naming the field) and the previous plan stays. `setPlan`, `removePlan` and `setDefault`
 * validate, write Redis, and take effect here at once and on every other instance at its next
 * refresh; when Redis cannot be written they fail with `QuotaStoreError` and take effect
 * nowhere. The same plan store as `@sluice/quota/Redis`'s `makeConfig`.
 *
 * @since 1.0.0
 * @category constructors
 */
export const makeConfig = (
  options: PlanStoreOptions
): Effect.Effect<
  QuotaConfigNs.Service<QuotaStoreNs.QuotaStoreError> & {
    readonly refresh: Effect.Effect<void, QuotaStoreNs.QuotaStoreError>
  },
  InvalidOptions,
  Redis.Redis | Scope.Scope
> => planStore.makeConfigEffect(options)

/**
 * The plan store as a layer on Effect's own `Redis` service (see {@link makeConfig}).
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { NodeRedis } from "@effect/platform-node"
 * import * as EffectRedis from "@sluice/quota/EffectRedis"
 * import { Layer } from "effect"
 *
 * const ConfigLive = EffectRedis.layerPlanStore({
 *   key: "sluice:quota:plans",
 *   default: { tiers: [{ name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 }] }
 * }).pipe(Layer.provide(NodeRedis.layer({ url: "redis://127.0.0.1:6379" })))
 * ```
 * @since 1.0.0
 * @category layers
 */
export const layerPlanStore = (
  options: PlanStoreOptions
): Layer.Layer<QuotaConfig, InvalidOptions, Redis.Redis> => Layer.effect(QuotaConfig, makeConfig(options))

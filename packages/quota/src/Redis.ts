/**
 * Quotas in Redis: the store that shares quota state between every instance of a service,
 * and the plan store that shares their plans.
 *
 * The store checks and updates every tier of a plan in ONE round trip: a single Lua script run
 * with `EVALSHA` (sent again with `EVAL` when Redis answers `NOSCRIPT`), reading the time from
 * Redis (`TIME`, no client clock), on ONE key per client, `prefix{client}` (Redis Cluster
 * routes it by the client's hash tag), which always carries a TTL: a string of little-endian
 * doubles (expiry, block, then per tier an id and its numbers) read with one `GET` and written
 * with one `SET`. The arithmetic is the memory store's, in whole milliseconds and integers, so
 * both stores decide alike, decision for decision. When a client's plan changes, the tiers that
 * keep their name and algorithm keep their state, as in the memory store. Keys of 0.1 (a hash)
 * are read as new clients and replaced on their next write.
 *
 * The plan store is a {@link QuotaConfig} whose per-client overrides live in a Redis hash and
 * whose default, once set, in a key beside it, so every instance sees the same plans.
 *
 * Each comes two ways: `layerStore` / `layerPlanStore` open a connection of their own (from
 * the options, or the `REDIS_URL` config), and `layerStoreShared` / `layerPlanStoreShared` take
 * the application's one ioredis connection from `@sluice/core/RedisClient`, which the adaptive
 * `RedisQpsSensor` shares too. The same store and plan store over Effect's own `Redis` service
 * (`effect/persistence/Redis`, e.g. `NodeRedis.layer` from `@effect/platform-node`) are
 * `@sluice/quota/EffectRedis`, which never loads `ioredis`.
 *
 * **Gotchas**
 *
 * - This module imports `ioredis` (an optional peer dependency); `@sluice/quota` itself never
 *   loads it. An app that holds Effect's `Redis` (e.g. `NodeRedis`) and no ioredis imports
 *   `@sluice/quota/EffectRedis` instead, which needs no ioredis installed.
 * - A check's deadline is `Quota`'s, not the client's: checks skip ioredis' `commandTimeout`,
 *   which still bounds the other commands (adjustments, plan reads and writes).
 * - `SET … KEEPTTL` needs Redis 6.0 or later.
 *
 * @since 0.1.0
 */
import type * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { InvalidOptions } from "@sluice/core/Options"
import * as RedisClient from "@sluice/core/RedisClient"
import type { PlanStoreOptions } from "./EffectRedis.js"
import * as planStore from "./internal/redisPlanStore.js"
import * as configInternal from "./internal/redisQuotaConfig.js"
import * as internal from "./internal/redisQuotaStore.js"
import { QuotaConfig } from "./QuotaConfig.js"
import type * as QuotaConfigNs from "./QuotaConfig.js"
import { QuotaStore } from "./QuotaStore.js"
import type * as QuotaStoreNs from "./QuotaStore.js"

/**
 * Store options: a key prefix (default `sluice:quota:`), and where the connection comes from
 * (see `RedisClient.ConnectionOptions`; ignored by {@link makeStoreShared} and
 * {@link layerStoreShared}, which use the shared one).
 *
 * @since 0.1.0
 * @category models
 */
export interface StoreOptions extends RedisClient.ConnectionOptions {
  readonly prefix?: string | undefined
}

/**
 * Options of the plan store: a hash `key` (default `sluice:quota:plans`) mapping client → plan
 * JSON, the default plan, and how often to refresh the local cache (default 5 seconds).
 * `default` is the default plan until one is stored in Redis (`setDefault` stores it at
 * `${key}:default`, as JSON). The connection options are ignored by {@link makeConfigShared}
 * and {@link layerPlanStoreShared}, which use the shared connection.
 *
 * @since 0.1.0
 * @category models
 */
export interface ConfigOptions extends RedisClient.ConnectionOptions, PlanStoreOptions {}

/**
 * Makes the Redis store on the shared connection (`RedisClient`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeStoreShared = (
  options: StoreOptions = {}
): Effect.Effect<QuotaStoreNs.Store, never, RedisClient.RedisClient | Scope.Scope> =>
  Effect.flatMap(RedisClient.RedisClient, ({ client }) => internal.makeStore(client, options.prefix))

/**
 * Makes the Redis store with a connection of its own (see {@link StoreOptions}).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeStore = (
  options: StoreOptions = {}
): Effect.Effect<QuotaStoreNs.Store, never, Scope.Scope> =>
  Effect.flatMap(RedisClient.client(options), (client) => internal.makeStore(client, options.prefix))

/**
 * The Redis store as a layer on the shared connection: one connection for the quota store, the
 * plan store and the QPS sensor.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import * as RedisClient from "@sluice/core/RedisClient"
 * import { Quota, QuotaConfig } from "@sluice/quota"
 * import * as Redis from "@sluice/quota/Redis"
 * import { Layer } from "effect"
 *
 * // every check decided within 15 ms (a hard bound: `maxDeadline` defaults to the deadline)
 * const QuotaLive = Quota.layer({ deadline: "15 millis" }).pipe(
 *   Layer.provide(Redis.layerStoreShared()),
 *   Layer.provide(
 *     QuotaConfig.layer({
 *       default: { tiers: [{ name: "count", algorithm: "sliding-window", limit: 5000, period: "1 hour" }] }
 *     })
 *   ),
 *   Layer.provide(RedisClient.layer())
 * )
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layerStoreShared = (
  options: StoreOptions = {}
): Layer.Layer<QuotaStore, never, RedisClient.RedisClient> =>
  Layer.effect(QuotaStore, makeStoreShared(options))

/**
 * The Redis store as a layer with a connection of its own.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { Quota, QuotaConfig } from "@sluice/quota"
 * import * as Redis from "@sluice/quota/Redis"
 * import { Layer } from "effect"
 *
 * // every check decided within 15 ms (a hard bound: `maxDeadline` defaults to the deadline);
 * // while Redis does not answer, a per-instance fallback quota decides
 * const QuotaLive = Quota.layer({ deadline: "15 millis" }).pipe(
 *   Layer.provide(Redis.layerStore({ url: "redis://127.0.0.1:6379" })),
 *   Layer.provide(
 *     QuotaConfig.layer({
 *       default: { tiers: [{ name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 }] }
 *     })
 *   )
 * )
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layerStore = (options: StoreOptions = {}): Layer.Layer<QuotaStore> =>
  Layer.effect(QuotaStore, makeStore(options))

/**
 * {@link layerStore} with its options read from `Config` (e.g. environment variables); a
 * missing or malformed value fails the layer with `ConfigError`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import * as Redis from "@sluice/quota/Redis"
 * import { Config } from "effect"
 *
 * const StoreLive = Redis.layerStoreConfig(
 *   Config.all({ url: Config.String("REDIS_URL"), prefix: Config.String("QUOTA_PREFIX") })
 * )
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerStoreConfig = (
  config: Config.Config<StoreOptions>
): Layer.Layer<QuotaStore, Config.ConfigError> =>
  Layer.unwrap(Effect.map(config, (options) => layerStore(options)))

/**
 * The plan store on the shared connection: a {@link QuotaConfig} whose plans live in Redis, so
 * every instance sees the same plans: the overrides in a hash at `key`, and the default, once
 * `setDefault` has stored one, at `${key}:default` (until then, and whenever that key is
 * deleted, each instance uses its `default` option). Reads are served from a local cache
 * refreshed in the background; a plan in Redis that does not decode is logged (naming the
 * field) and the previous plan stays. `setPlan`, `removePlan` and `setDefault` validate, write
 * Redis, and take effect here at once and on every other instance at its next refresh; when
 * Redis cannot be written they fail with `QuotaStoreError` (`reason` `"unavailable"`,
 * `"timeout"` or `"error"`) and take effect nowhere.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeConfigShared = (
  options: ConfigOptions
): Effect.Effect<
  QuotaConfigNs.Service<QuotaStoreNs.QuotaStoreError> & {
    readonly refresh: Effect.Effect<void, QuotaStoreNs.QuotaStoreError>
  },
  InvalidOptions,
  RedisClient.RedisClient | Scope.Scope
> => configInternal.makeConfig(options)

/**
 * The plan store ({@link makeConfigShared}) with a connection of its own.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeConfig = (
  options: ConfigOptions
): Effect.Effect<
  QuotaConfigNs.Service<QuotaStoreNs.QuotaStoreError> & {
    readonly refresh: Effect.Effect<void, QuotaStoreNs.QuotaStoreError>
  },
  InvalidOptions,
  Scope.Scope
> =>
  Effect.flatMap(RedisClient.client(options), (client) =>
    Effect.provideService(configInternal.makeConfig(options), RedisClient.RedisClient, { client })
  )

/**
 * The plan store as a layer on the shared connection: a `QuotaConfig` whose plans are stored
 * in Redis (see {@link makeConfigShared}).
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import * as RedisClient from "@sluice/core/RedisClient"
 * import * as Redis from "@sluice/quota/Redis"
 * import { Layer } from "effect"
 *
 * const ConfigLive = Redis.layerPlanStoreShared({
 *   key: "sluice:quota:plans",
 *   refresh: "5 seconds",
 *   default: { tiers: [{ name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 }] }
 * }).pipe(Layer.provide(RedisClient.layer()))
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layerPlanStoreShared = (
  options: ConfigOptions
): Layer.Layer<QuotaConfig, InvalidOptions, RedisClient.RedisClient> =>
  Layer.effect(QuotaConfig, makeConfigShared(options))

/**
 * The plan store as a layer with a connection of its own.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPlanStore = (options: ConfigOptions): Layer.Layer<QuotaConfig, InvalidOptions> =>
  Layer.effect(QuotaConfig, makeConfig(options))

/**
 * A plan as JSON (periods in milliseconds), as the plan store stores it.
 *
 * @since 0.1.0
 * @category encoding
 */
export const planToJson: (plan: QuotaConfigNs.Plan) => string = planStore.planToJson

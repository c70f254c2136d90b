/**
 * Quotas in Redis over ioredis: the store and the plan store of `@sluice/quota/Redis` (same
 * script, keys and decisions; see there) on an ioredis connection, for an app that holds one.
 *
 * Each comes two ways: `layerStore` / `layerPlanStore` open a connection of their own (from
 * the options, or the `REDIS_URL` config), and `layerStoreShared` / `layerPlanStoreShared` take
 * the application's one ioredis connection from `@sluice/core/IoRedisClient`, which the adaptive
 * `IoRedisQpsSensor` shares too. A failed command is a `QuotaStoreError` whose `reason` says what
 * happened: `"timeout"`, `"unavailable"` (refused, closed, not writeable, `LOADING`, a cluster or
 * replica down) or `"error"`.
 *
 * **Gotchas**
 *
 * - This module imports `ioredis` (an optional peer dependency); `@sluice/quota` itself never
 *   loads it. An app that holds Effect's `Redis` (e.g. `NodeRedis`) and no ioredis imports
 *   `@sluice/quota/Redis` instead, which needs no ioredis installed.
 * - A check's deadline is `Quota`'s, not the client's: checks skip ioredis' `commandTimeout`,
 *   which still bounds the other commands (`reset`, `penalty`, `reward`, `block`, plan reads and
 *   writes: 1 second on a connection built here, ioredis' own default, none, on one you pass).
 * - After every reconnection the store loads its scripts again (a restarted Redis has none), and
 *   for 30 s its checks carry their clients' floors (see the quota README, "When Redis loses its
 *   state").
 * - `SET … KEEPTTL` needs Redis 6.0 or later.
 *
 * @since 0.1.0
 */
import type * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { InvalidOptions } from "@sluice/core/Options"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import type { PlanStoreOptions } from "./Redis.js"
import * as planStore from "./internal/redisPlanStore.js"
import type { QuotaStoreError } from "./internal/quotaPlan.js"
import { toStoreError } from "./internal/redisTransportStore.js"
import * as internal from "./internal/ioRedisStore.js"
import { QuotaConfig } from "./QuotaConfig.js"
import type * as QuotaConfigNs from "./QuotaConfig.js"
import { QuotaStore } from "./QuotaStore.js"
import type * as QuotaStoreNs from "./QuotaStore.js"

const fromPromise = <A>(f: () => Promise<A>): Effect.Effect<A, QuotaStoreError> =>
  Effect.tryPromise({ try: f, catch: toStoreError })

// The plan source's commands over an ioredis client (the source itself is `internal/redisPlanStore.ts`).
const planConnection = (redis: internal.Client): planStore.PlanConnection => ({
  hgetall: (key) => fromPromise(() => redis.hgetall(key)),
  get: (key) => fromPromise(() => redis.get(key)),
  set: (key, value) => Effect.asVoid(fromPromise(() => redis.set(key, value))),
  hset: (key, field, value) => Effect.asVoid(fromPromise(() => redis.hset(key, field, value))),
  hdel: (key, field) => Effect.asVoid(fromPromise(() => redis.hdel(key, field)))
})

// The plan source on the shared client.
const makePlanConfig = (
  options: planStore.ConfigOptions
): Effect.Effect<
  QuotaConfigNs.Service<QuotaStoreError> & { readonly refresh: Effect.Effect<void, QuotaStoreError> },
  InvalidOptions,
  IoRedisClient.IoRedisClient | Scope.Scope
> =>
  Effect.flatMap(IoRedisClient.IoRedisClient, ({ client }) =>
    planStore.makeConfigOn(planConnection(client), options)
  )

/**
 * Store options: a key prefix (default `sluice:quota:`), and where the connection comes from
 * (see `IoRedisClient.ConnectionOptions`; ignored by {@link makeStoreShared} and
 * {@link layerStoreShared}, which use the shared one).
 *
 * @since 0.1.0
 * @category models
 */
export interface StoreOptions extends IoRedisClient.ConnectionOptions {
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
export interface ConfigOptions extends IoRedisClient.ConnectionOptions, PlanStoreOptions {}

/**
 * Makes the Redis store on the shared connection (`IoRedisClient`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeStoreShared = (
  options: StoreOptions = {}
): Effect.Effect<QuotaStoreNs.Store, never, IoRedisClient.IoRedisClient | Scope.Scope> =>
  Effect.flatMap(IoRedisClient.IoRedisClient, ({ client }) => internal.makeStore(client, options.prefix))

/**
 * Makes the Redis store with a connection of its own (see {@link StoreOptions}).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeStore = (
  options: StoreOptions = {}
): Effect.Effect<QuotaStoreNs.Store, never, Scope.Scope> =>
  Effect.flatMap(IoRedisClient.client(options), (client) => internal.makeStore(client, options.prefix))

/**
 * The Redis store as a layer on the shared connection: one connection for the quota store, the
 * plan store and the QPS sensor.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import * as IoRedisClient from "@sluice/core/IoRedisClient"
 * import { Quota, QuotaConfig } from "@sluice/quota"
 * import * as IoRedis from "@sluice/quota/IoRedis"
 * import { Layer } from "effect"
 *
 * // every check decided within 15 ms (a hard bound: `maxDeadline` defaults to the deadline)
 * const QuotaLive = Quota.layer({ deadline: "15 millis" }).pipe(
 *   Layer.provide(IoRedis.layerStoreShared()),
 *   Layer.provide(
 *     QuotaConfig.layer({
 *       default: { tiers: [{ name: "count", algorithm: "sliding-window", limit: 5000, period: "1 hour" }] }
 *     })
 *   ),
 *   Layer.provide(IoRedisClient.layer())
 * )
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layerStoreShared = (
  options: StoreOptions = {}
): Layer.Layer<QuotaStore, never, IoRedisClient.IoRedisClient> =>
  Layer.effect(QuotaStore, makeStoreShared(options))

/**
 * The Redis store as a layer with a connection of its own.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { Quota, QuotaConfig } from "@sluice/quota"
 * import * as IoRedis from "@sluice/quota/IoRedis"
 * import { Layer } from "effect"
 *
 * // every check decided within 15 ms (a hard bound: `maxDeadline` defaults to the deadline);
 * // while Redis does not answer, a per-instance fallback quota decides
 * const QuotaLive = Quota.layer({ deadline: "15 millis" }).pipe(
 *   Layer.provide(IoRedis.layerStore({ url: "redis://127.0.0.1:6379" })),
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
 * import * as IoRedis from "@sluice/quota/IoRedis"
 * import { Config } from "effect"
 *
 * const StoreLive = IoRedis.layerStoreConfig(
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
  IoRedisClient.IoRedisClient | Scope.Scope
> => makePlanConfig(options)

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
  Effect.flatMap(IoRedisClient.client(options), (client) =>
    Effect.provideService(makePlanConfig(options), IoRedisClient.IoRedisClient, { client })
  )

/**
 * The plan store as a layer on the shared connection: a `QuotaConfig` whose plans are stored
 * in Redis (see {@link makeConfigShared}).
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import * as IoRedisClient from "@sluice/core/IoRedisClient"
 * import * as IoRedis from "@sluice/quota/IoRedis"
 * import { Layer } from "effect"
 *
 * const ConfigLive = IoRedis.layerPlanStoreShared({
 *   key: "sluice:quota:plans",
 *   refresh: "5 seconds",
 *   default: { tiers: [{ name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 }] }
 * }).pipe(Layer.provide(IoRedisClient.layer()))
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layerPlanStoreShared = (
  options: ConfigOptions
): Layer.Layer<QuotaConfig, InvalidOptions, IoRedisClient.IoRedisClient> =>
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

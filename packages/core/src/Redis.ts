/**
 * Redis for Sluice quotas, in one import: the shared client ({@link RedisClient}), the quota
 * store ({@link RedisQuotaStore}) and the plan source ({@link RedisQuotaConfig}), each also a
 * module of its own. `layerStore` and `layerPlanStore` here take an optional connection and open
 * their own client when given one (or none); to share one connection, use the modules above
 * with `RedisClient.layer` provided once.
 *
 * This module imports `ioredis` (an optional peer dependency); `@sluice/core` itself never
 * loads it.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { InvalidOptions } from "./Options.js"
import type { QuotaConfig } from "./QuotaConfig.js"
import type * as QuotaConfigNs from "./QuotaConfig.js"
import type { QuotaStore } from "./QuotaStore.js"
import type * as QuotaStoreNs from "./QuotaStore.js"
import * as RedisClient from "./RedisClient.js"
import * as RedisQuotaConfig from "./RedisQuotaConfig.js"
import * as RedisQuotaStore from "./RedisQuotaStore.js"

/**
 * A standalone or cluster ioredis client.
 *
 * @since 0.1.0
 * @category models
 */
export type Client = RedisClient.Client

/**
 * @since 0.1.0
 * @category models
 */
export type ConnectionOptions = RedisClient.ConnectionOptions

/**
 * @since 0.1.0
 * @category constants
 */
export const defaultRedisOptions = RedisClient.defaultRedisOptions

/**
 * @since 0.1.0
 * @category constructors
 */
export const client: (options?: ConnectionOptions) => Effect.Effect<Client, never, Scope.Scope> =
  RedisClient.client

/**
 * Store options: the connection and a key prefix (default `sluice:quota:`).
 *
 * @since 0.1.0
 * @category models
 */
export interface StoreOptions extends ConnectionOptions, RedisQuotaStore.StoreOptions {}

/**
 * @since 0.1.0
 * @category models
 */
export interface ConfigOptions extends ConnectionOptions, RedisQuotaConfig.ConfigOptions {}

const clientLayer = (options: ConnectionOptions): Layer.Layer<RedisClient.RedisClient> =>
  RedisClient.layer(options)

/**
 * Makes the Redis store with its own client (see {@link StoreOptions}).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeStore = (
  options: StoreOptions = {}
): Effect.Effect<QuotaStoreNs.Store, never, Scope.Scope> =>
  Effect.flatMap(RedisClient.client(options), (client) =>
    Effect.provideService(RedisQuotaStore.makeStore(options), RedisClient.RedisClient, { client })
  )

/**
 * The Redis {@link QuotaStore} with its own client.
 *
 * @example
 * ```ts
 * import { Quota, QuotaConfig } from "@sluice/core"
 * import * as Redis from "@sluice/core/Redis"
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
  RedisQuotaStore.layerStore(options).pipe(Layer.provide(clientLayer(options)))

/**
 * Makes the Redis plan source with its own client.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeConfig = (
  options: ConfigOptions
): Effect.Effect<
  QuotaConfigNs.Service & { readonly refresh: Effect.Effect<void, QuotaStoreNs.QuotaStoreError> },
  InvalidOptions,
  Scope.Scope
> =>
  Effect.flatMap(RedisClient.client(options), (client) =>
    Effect.provideService(RedisQuotaConfig.makeConfig(options), RedisClient.RedisClient, { client })
  )

/**
 * The Redis plan source (a `QuotaConfig` whose plans are stored in Redis) with its own client.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerPlanStore = (options: ConfigOptions): Layer.Layer<QuotaConfig, InvalidOptions> =>
  RedisQuotaConfig.layerPlanStore(options).pipe(Layer.provide(clientLayer(options)))

/**
 * A plan as JSON (periods in milliseconds), as the plan source stores it.
 *
 * @since 0.1.0
 * @category encoding
 */
export const planToJson = RedisQuotaConfig.planToJson

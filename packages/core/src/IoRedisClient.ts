/**
 * One ioredis connection for everything Sluice keeps in Redis over ioredis: the quota store and the plan
 * store (`@sluice/quota/IoRedis`, `layerStoreShared` and `layerPlanStoreShared`) and the
 * QPS sensor (`@sluice/adaptive/IoRedisQpsSensor`) all take their client from this service, so an
 * application opens one connection (or passes a client, or a cluster, it chose). An app on Effect's
 * own `Redis` service (e.g. `NodeRedis`) needs none of this: `@sluice/quota/Redis` and
 * `@sluice/adaptive/RedisQpsSensor` take that connection.
 *
 * This module imports `ioredis` (an optional peer dependency); `@sluice/core` itself never
 * loads it.
 *
 * **Details**
 *
 * - {@link layer} is a scoped `Layer.effect`: a client built here is closed (`QUIT`, then
 *   a disconnect after a second) when the layer's scope closes; a client you pass in is
 *   yours and stays open.
 * - Without `client` or `url`, the URL is the `REDIS_URL` config
 *   (`Config.String("REDIS_URL")`, from the current `ConfigProvider`), defaulting to
 *   `redis://127.0.0.1:6379`.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { Cluster, Redis as IORedis, RedisOptions } from "ioredis"
import * as internal from "./internal/ioRedisClient.js"

/**
 * A standalone or cluster ioredis client.
 *
 * @since 0.1.0
 * @category models
 */
export type Client = IORedis | Cluster

/**
 * Where the client comes from: an existing ioredis client (standalone or cluster; you own it,
 * it is not closed), a URL, or — when neither is given — the `REDIS_URL` config (default
 * `redis://127.0.0.1:6379`); `redisOptions` are merged over {@link defaultRedisOptions} for a
 * client built here.
 *
 * @since 0.1.0
 * @category models
 */
export interface ConnectionOptions {
  readonly client?: Client | undefined
  readonly url?: string | undefined
  readonly redisOptions?: RedisOptions | undefined
}

/**
 * Options of a client built here. A quota check must never wait behind a dead connection:
 * commands fail at once while disconnected (no offline queue, no retries), a command the
 * server never answers is dropped after `commandTimeout` (quota checks skip that timer: their
 * deadline is `Quota`'s), and reconnection is quick so
 * recovery is seen within one breaker probe interval. No auto-pipelining (it delays every
 * command by an event-loop turn).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultRedisOptions: RedisOptions = internal.defaultRedisOptions

/**
 * The shared client.
 *
 * @since 0.2.0
 * @category models
 */
export interface Service {
  readonly client: Client
}

/**
 * @since 0.2.0
 * @category tags
 */
export class IoRedisClient extends Context.Service<IoRedisClient, Service>()("@sluice/core/IoRedisClient") {}

/**
 * Acquires a client: the given one as is, or a new one closed with the scope. Waits (at most
 * `connectTimeout`) for a new client to be ready; if Redis is not there yet the client keeps
 * reconnecting and store calls meet their failure mode.
 *
 * @since 0.1.0
 * @category constructors
 */
export const client = (options: ConnectionOptions = {}): Effect.Effect<Client, never, Scope.Scope> =>
  internal.acquire(options)

/**
 * The shared client as a layer; provide it once and every Redis-backed service uses it.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import * as IoRedisClient from "@sluice/core/IoRedisClient"
 * import { Quota, QuotaConfig } from "@sluice/quota"
 * import * as IoRedis from "@sluice/quota/IoRedis"
 * import { Layer } from "effect"
 *
 * const plan: QuotaConfig.PlanInput = {
 *   tiers: [{ name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 }]
 * }
 * // one connection, shared by the store and the plan source
 * const QuotaLive = Quota.layer().pipe(
 *   Layer.provide(IoRedis.layerStoreShared({ prefix: "myapp:quota:" })),
 *   Layer.provide(IoRedis.layerPlanStoreShared({ default: plan })),
 *   Layer.provide(IoRedisClient.layer({ url: "redis://127.0.0.1:6379" }))
 * )
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layer = (options: ConnectionOptions = {}): Layer.Layer<IoRedisClient> =>
  Layer.effect(
    IoRedisClient,
    Effect.map(internal.acquire(options), (client): Service => ({ client }))
  )

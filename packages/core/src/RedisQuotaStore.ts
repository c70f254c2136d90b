/**
 * The Redis {@link QuotaStore}: quota state shared by every instance of a service.
 *
 * Every tier of a plan is checked and updated in ONE round trip: a single Lua script run with
 * `EVALSHA` (sent again with `EVAL` when Redis answers `NOSCRIPT`), reading the time from Redis
 * (`TIME`, no client clock), on ONE key per client, `prefix{client}` (Redis Cluster routes it
 * by the client's hash tag), which always carries a TTL: a string of little-endian doubles
 * (expiry, block, then per tier an id and its numbers) read with one `GET` and written with one
 * `SET`. The arithmetic is the memory store's, in whole milliseconds and integers, so both
 * stores decide alike, decision for decision. When a client's plan changes, the tiers that keep
 * their name and algorithm keep their state, as in the memory store. Keys of 0.1 (a hash) are
 * read as new clients and replaced on their next write.
 *
 * The client comes from {@link RedisClient} (one connection for the app).
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as internal from "./internal/redisQuotaStore.js"
import { QuotaStore } from "./QuotaStore.js"
import type * as QuotaStoreNs from "./QuotaStore.js"
import { RedisClient } from "./RedisClient.js"

/**
 * Store options: a key prefix (default `sluice:quota:`).
 *
 * @since 0.2.0
 * @category models
 */
export interface StoreOptions {
  readonly prefix?: string | undefined
}

/**
 * Makes the Redis store on the shared client.
 *
 * @since 0.2.0
 * @category constructors
 */
export const makeStore = (
  options: StoreOptions = {}
): Effect.Effect<QuotaStoreNs.Store, never, RedisClient | Scope.Scope> =>
  Effect.flatMap(RedisClient, ({ client }) => internal.makeStore(client, options.prefix))

/**
 * The Redis store as a layer.
 *
 * @example
 * ```ts
 * import { Quota, QuotaConfig } from "@sluice/core"
 * import * as RedisClient from "@sluice/core/RedisClient"
 * import * as RedisQuotaStore from "@sluice/core/RedisQuotaStore"
 * import { Layer } from "effect"
 *
 * // every check decided within 15 ms (a hard bound: `maxDeadline` defaults to the deadline)
 * const QuotaLive = Quota.layer({ deadline: "15 millis" }).pipe(
 *   Layer.provide(RedisQuotaStore.layerStore()),
 *   Layer.provide(
 *     QuotaConfig.layer({
 *       default: { tiers: [{ name: "count", algorithm: "sliding-window", limit: 5000, period: "1 hour" }] }
 *     })
 *   ),
 *   Layer.provide(RedisClient.layer())
 * )
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerStore = (options: StoreOptions = {}): Layer.Layer<QuotaStore, never, RedisClient> =>
  Layer.scoped(QuotaStore, makeStore(options))

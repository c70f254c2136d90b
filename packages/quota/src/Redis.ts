/**
 * Quotas in Redis, over Effect's own `Redis` service (`effect/persistence/Redis`, e.g.
 * `NodeRedis.layer` from `@effect/platform-node`, over node-redis): the store that shares quota
 * state between every instance of a service, and the plan store that shares their plans, on the
 * connection the app already holds (no second one). This module never loads `ioredis`; the same
 * store and plan store over ioredis are `@sluice/quota/IoRedis`, and instances on either client
 * can share one Redis.
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
 * The plan store is a {@link QuotaConfig} whose per-client overrides live in a Redis hash at
 * `key` and whose default, once set, at `${key}:default`, so every instance sees the same plans.
 *
 * A failed command is a `QuotaStoreError` whose `reason` says what happened, as over ioredis:
 * node-redis' "The client is offline" (Redis gone, offline queue off), a closed or refused
 * socket, a `LOADING` or `MASTERDOWN` Redis are `"unavailable"`; its "Connection timeout",
 * "Socket timeout …" and the empty `TimeoutError` it fails a command with once the command's own
 * timeout has passed (`commandOptions.timeout`, 5 s by default, e.g. a command that waited in its
 * offline queue while Redis was away) are `"timeout"`; anything else is `"error"`.
 *
 * **Gotchas**
 *
 * - Only `check` (and `get`) has a deadline, `Quota`'s: `reset`, `penalty`, `reward` and `block`
 *   wait as long as the application's Redis client lets a command wait (node-redis' offline
 *   queue, on by default, keeps them while Redis is away). Bound them where that matters
 *   (`Effect.timeout`).
 * - A restarted Redis is noticed by its first `NOSCRIPT` (that check sends the script with
 *   `EVAL`, and the client's floor), by a failed check, or by a client's key found gone, not by
 *   a reconnection event (see the quota README, "When Redis loses its state"); node-redis' own
 *   command timeouts still apply to checks (`Quota`'s deadline bounds them anyway).
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
 * one. Same script, keys and decisions as `@sluice/quota/IoRedis`'s `makeStore`.
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
 * import * as Redis from "@sluice/quota/Redis"
 * import { Layer } from "effect"
 *
 * // the quota store on the app's NodeRedis connection (node-redis): no ioredis, no second connection
 * const QuotaLive = Quota.layer({ deadline: "15 millis" }).pipe(
 *   Layer.provide(Redis.layerStore({ prefix: "sluice:quota:" })),
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
 * nowhere. The same plan store as `@sluice/quota/IoRedis`'s `makeConfig`.
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
 * import * as Redis from "@sluice/quota/Redis"
 * import { Layer } from "effect"
 *
 * const ConfigLive = Redis.layerPlanStore({
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

/**
 * A global `QpsSensor` on Redis, over Effect's own `Redis` service (`effect/persistence/Redis`,
 * e.g. `NodeRedis.layer` from `@effect/platform-node`, over node-redis): every worker counts
 * what it sends into shared per-second counters, and reads their smoothed sum, so
 * `ProportionalSampler`s on many hosts hold one goal together without knowing how many of them
 * there are. It runs on the connection the app already holds (the one the quota store of
 * `@sluice/quota/Redis` can share) and never loads `ioredis`; the same sensor over ioredis is
 * `@sluice/adaptive/IoRedisQpsSensor`. Workers on either client, with the same key and prefix,
 * count into the same per-second counters and measure each other. The package index loads
 * neither.
 *
 * - Counting is local and synchronous: `recordUnsafe` adds to an in-process
 *   per-second tally, and a background fiber flushes it every `flushInterval`
 *   (default 100 ms) with an `INCRBY` + `EXPIRE` per second touched,
 *   so the hot path never waits on Redis. Keys are
 *   `<prefix>{<key>}:<epoch second>`, all sharing the hash tag `{<key>}`, each with a
 *   TTL (default `window` + 60 s).
 * - `measure` flushes this worker's tally, then reads (`MGET`) the last `window`
 *   complete seconds (default 2) that ended at least `settle` ago (default 300 ms,
 *   so other workers have flushed them) and returns their average.
 *
 * **Gotchas**
 *
 * - A flush's `INCRBY` + `EXPIRE` commands are sent together (node-redis writes them in one
 *   batch), not as an ioredis pipeline; a flush fails, and its counts are dropped, if any of
 *   them fails.
 * - Seconds are numbered by each worker's own `Clock`; keep hosts' clocks in sync (NTP) — a
 *   skew of a fraction of a second only shifts counts between neighbouring seconds.
 * - When Redis is unreachable or slower than `timeout` (default 250 ms), `measure` returns
 *   `None` and the counts of that flush are dropped: the sampler then sees a stale sensor and
 *   applies its documented stale behaviour.
 *
 * @since 1.0.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redis from "effect/persistence/Redis"
import type * as Scope from "effect/Scope"
import type { Options } from "@sluice/core"
import * as internal from "./internal/redisSensor.js"
import { QpsSensor } from "./QpsSensor.js"
import type { Service as QpsSensorService } from "./QpsSensor.js"

/**
 * Options, validated by a Schema at construction (the connection is Effect's `Redis` from
 * context):
 *
 * - `key`: the name of the shared counter (non-empty); workers with the same key
 *   measure each other.
 * - `prefix`: default `"sluice:qps:"`.
 * - `window`: complete seconds averaged (positive integer, default 2).
 * - `flushInterval` (default 100 ms), `settle` (default 300 ms), `timeout` (default
 *   250 ms), `ttl` (default `window` + 60 s): positive durations.
 *
 * @since 1.0.0
 * @category models
 */
export interface SensorOptions {
  readonly key: string
  readonly prefix?: string | undefined
  readonly window?: number | undefined
  readonly flushInterval?: Duration.Input | undefined
  readonly settle?: Duration.Input | undefined
  readonly timeout?: Duration.Input | undefined
  readonly ttl?: Duration.Input | undefined
}

/**
 * Makes a Redis sensor on Effect's own `Redis` service (e.g. from `NodeRedis.layer` of
 * `@effect/platform-node`); its flush loop lives as long as the scope.
 *
 * @example
 * ```ts
 * import { NodeRedis } from "@effect/platform-node"
 * import { ProportionalSampler } from "@sluice/adaptive"
 * import * as RedisQpsSensor from "@sluice/adaptive/RedisQpsSensor"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const sensor = yield* RedisQpsSensor.make({ key: "thumbnails" })
 *   const sampler = yield* ProportionalSampler.makeWith({ goal: 100 }, sensor)
 *   return yield* sampler.withSampler(Effect.succeed("rendered"), Effect.succeed("skipped"))
 * }).pipe(Effect.scoped, Effect.provide(NodeRedis.layer({ url: "redis://127.0.0.1:6379" })))
 * Effect.runPromise(program).then(console.log) // prints: rendered
 * ```
 * @since 1.0.0
 * @category constructors
 */
export const make: (
  options: SensorOptions
) => Effect.Effect<QpsSensorService, Options.InvalidOptions, Redis.Redis | Scope.Scope> = internal.makeEffect

/**
 * A Layer providing a Redis sensor under `QpsSensor`, on Effect's own `Redis` service (e.g.
 * `NodeRedis`): the connection the app already holds, which `@sluice/quota/Redis`'s
 * `layerStore` can share.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { NodeRedis } from "@effect/platform-node"
 * import * as RedisQpsSensor from "@sluice/adaptive/RedisQpsSensor"
 * import { Layer } from "effect"
 *
 * const SensorLive = RedisQpsSensor.layer({ key: "thumbnails" }).pipe(
 *   Layer.provide(NodeRedis.layer({ url: "redis://127.0.0.1:6379" }))
 * )
 * ```
 * @since 1.0.0
 * @category layers
 */
export const layer = (options: SensorOptions): Layer.Layer<QpsSensor, Options.InvalidOptions, Redis.Redis> =>
  Layer.effect(QpsSensor, internal.makeEffect(options))

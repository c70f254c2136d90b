/**
 * A global `QpsSensor` on Redis: every worker counts what it sends into shared
 * per-second counters, and reads their smoothed sum, so `ProportionalSampler`s on
 * many hosts hold one goal together without knowing how many of them there are.
 *
 * This module imports `ioredis` (through `@sluice/core/RedisClient`); `layerShared` takes the
 * application's one connection from there. Import it as `@sluice/adaptive/RedisQpsSensor`. The
 * package index does not load it. The same sensor over Effect's own `Redis` service (e.g.
 * `NodeRedis` from `@effect/platform-node`) is `@sluice/adaptive/EffectRedisQpsSensor`, which
 * never loads `ioredis`: an app that holds no ioredis imports that one instead.
 *
 * - Counting is local and synchronous: `recordUnsafe` adds to an in-process
 *   per-second tally, and a background fiber flushes it every `flushInterval`
 *   (default 100 ms) with one pipeline of `INCRBY` + `EXPIRE` per second touched,
 *   so the hot path never waits on Redis. Keys are
 *   `<prefix>{<key>}:<epoch second>`, all sharing the hash tag `{<key>}`, each with a
 *   TTL (default `window` + 60 s).
 * - `measure` flushes this worker's tally, then reads (`MGET`) the last `window`
 *   complete seconds (default 2) that ended at least `settle` ago (default 300 ms,
 *   so other workers have flushed them) and returns their average.
 * - Seconds are numbered by each worker's own `Clock`; keep hosts' clocks in sync
 *   (NTP) — a skew of a fraction of a second only shifts counts between
 *   neighbouring seconds.
 * - When Redis is unreachable or slower than `timeout` (default 250 ms), `measure`
 *   returns `None` and the counts of that flush are dropped: the sampler then sees
 *   a stale sensor and applies its documented stale behaviour.
 *
 * @since 0.1.0
 */
import type * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { Options } from "@sluice/core"
import type * as RedisClient from "@sluice/core/RedisClient"
import type { SensorOptions } from "./EffectRedisQpsSensor.js"
import * as internal from "./internal/redisQpsSensor.js"
import * as sensorInternal from "./internal/redisSensor.js"
import { QpsSensor } from "./QpsSensor.js"
import type { Service as QpsSensorService } from "./QpsSensor.js"
import type * as Config from "effect/Config"
import * as Effect from "effect/Effect"

/**
 * Options, validated by a Schema at construction, plus where the Redis client comes
 * from (`client`, `url`, or the `REDIS_URL` config, default `redis://127.0.0.1:6379`):
 *
 * - `key`: the name of the shared counter (non-empty); workers with the same key
 *   measure each other.
 * - `prefix`: default `"sluice:qps:"`.
 * - `window`: complete seconds averaged (positive integer, default 2).
 * - `flushInterval` (default 100 ms), `settle` (default 300 ms), `timeout` (default
 *   250 ms), `ttl` (default `window` + 60 s): positive durations.
 *
 * @since 0.1.0
 * @category models
 */
export interface RedisQpsSensorOptions extends RedisClient.ConnectionOptions, SensorOptions {}

/**
 * Makes a Redis sensor; its flush loop (and a client built here) live as long as the scope.
 *
 * @example
 * ```ts
 * import { ProportionalSampler } from "@sluice/adaptive"
 * import * as RedisQpsSensor from "@sluice/adaptive/RedisQpsSensor"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   // `url`, or the REDIS_URL config (default redis://127.0.0.1:6379)
 *   const sensor = yield* RedisQpsSensor.make({ key: "thumbnails" })
 *   const sampler = yield* ProportionalSampler.makeWith({ goal: 100 }, sensor)
 *   return yield* sampler.withSampler(Effect.succeed("rendered"), Effect.succeed("skipped"))
 * }).pipe(Effect.scoped)
 * Effect.runPromise(program).then(console.log) // prints: rendered
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (
  options: RedisQpsSensorOptions
) => Effect.Effect<QpsSensorService, Options.InvalidOptions, Scope.Scope> = internal.make

/**
 * A Layer providing a Redis sensor under `QpsSensor`, or under the given key.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: {
  (options: RedisQpsSensorOptions): Layer.Layer<QpsSensor, Options.InvalidOptions>
  <I>(
    options: RedisQpsSensorOptions,
    tag: Context.Key<I, QpsSensorService>
  ): Layer.Layer<I, Options.InvalidOptions>
} = (
  options: RedisQpsSensorOptions,
  tag?: Context.Key<any, QpsSensorService>
): Layer.Layer<any, Options.InvalidOptions> => Layer.effect(tag ?? QpsSensor, internal.make(options))

/**
 * The Redis key of one second's counter.
 *
 * @since 0.1.0
 * @category utils
 */
export const keyFor: (prefix: string, key: string, second: number) => string = sensorInternal.keyFor

/**
 * A Layer providing a Redis sensor on the application's shared connection
 * (`@sluice/core/RedisClient`), the one the quota store and plan source use; the connection
 * options of `options` are ignored.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import * as RedisQpsSensor from "@sluice/adaptive/RedisQpsSensor"
 * import * as RedisClient from "@sluice/core/RedisClient"
 * import { Layer } from "effect"
 *
 * const SensorLive = RedisQpsSensor.layerShared({ key: "thumbnails" }).pipe(Layer.provide(RedisClient.layer()))
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerShared = (
  options: RedisQpsSensorOptions
): Layer.Layer<QpsSensor, Options.InvalidOptions, RedisClient.RedisClient> =>
  Layer.effect(QpsSensor, internal.makeShared(options))

/**
 * {@link layer} with its options read from `Config` (e.g. environment variables): a
 * missing or malformed value fails the layer with `ConfigError`, a bad value with
 * `InvalidOptions` naming the field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import * as RedisQpsSensor from "@sluice/adaptive/RedisQpsSensor"
 * import { Config } from "effect"
 *
 * const Live = RedisQpsSensor.layerConfig(Config.all({ key: Config.String("QPS_KEY"), url: Config.String("REDIS_URL") }))
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<RedisQpsSensorOptions>
): Layer.Layer<QpsSensor, Options.InvalidOptions | Config.ConfigError> =>
  Layer.unwrap(Effect.map(config, (options) => layer(options)))

/**
 * The global `QpsSensor` of `@sluice/adaptive/RedisQpsSensor` (same keys, counts and readings;
 * see there) over ioredis, for an app that holds an ioredis connection: a flush is one
 * pipeline of `INCRBY` + `EXPIRE` per second touched.
 *
 * This module imports `ioredis` (through `@sluice/core/IoRedisClient`); `layerShared` takes the
 * application's one ioredis connection from there, the one `@sluice/quota/IoRedis` shares. The
 * package index does not load it; an app that holds no ioredis imports
 * `@sluice/adaptive/RedisQpsSensor` instead.
 *
 * @since 0.1.0
 */
import type * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { Options } from "@sluice/core"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import type { SensorOptions } from "./RedisQpsSensor.js"
import * as sensorInternal from "./internal/redisSensor.js"
import { QpsSensor } from "./QpsSensor.js"
import type { Service as QpsSensorService } from "./QpsSensor.js"
import type * as Config from "effect/Config"
import * as Effect from "effect/Effect"

// The sensor's commands over an ioredis client: one pipeline per flush (the sensor itself is
// `internal/redisSensor.ts`, shared with the sensor over Effect's Redis).
const ioredisConnection = (redis: IoRedisClient.Client): sensorInternal.SensorConnection => ({
  add: (counts, ttlSeconds) =>
    Effect.tryPromise(() => {
      const pipeline = redis.pipeline()
      for (const [key, n] of counts) {
        pipeline.incrby(key, n)
        pipeline.expire(key, ttlSeconds)
      }
      return pipeline.exec()
    }).pipe(
      Effect.flatMap((results) =>
        results !== null && results.every(([error]) => error === null) ? Effect.void : Effect.fail(results)
      )
    ),
  mget: (keys) => Effect.tryPromise(() => redis.mget(...keys))
})

// The sensor over a client: its own connection (`make`) or the app's shared one.
const startOn = <Env>(
  options: IoRedisQpsSensorOptions,
  connect: (
    connection: IoRedisClient.ConnectionOptions
  ) => Effect.Effect<sensorInternal.SensorConnection, never, Env>
) =>
  Effect.suspend(() => {
    const { client, redisOptions, url, ...rest } = options
    return sensorInternal.start(rest, connect({ client, redisOptions, url }))
  })

const makeOwn = (options: IoRedisQpsSensorOptions) =>
  startOn(options, (connection) => Effect.map(IoRedisClient.client(connection), ioredisConnection))

const makeShared = (options: IoRedisQpsSensorOptions) =>
  startOn(options, () =>
    Effect.map(IoRedisClient.IoRedisClient, (shared) => ioredisConnection(shared.client))
  )

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
export interface IoRedisQpsSensorOptions extends IoRedisClient.ConnectionOptions, SensorOptions {}

/**
 * Makes a Redis sensor; its flush loop (and a client built here) live as long as the scope.
 *
 * @example
 * ```ts
 * import { ProportionalSampler } from "@sluice/adaptive"
 * import * as IoRedisQpsSensor from "@sluice/adaptive/IoRedisQpsSensor"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
 *   const sensor = yield* IoRedisQpsSensor.make({ key: "thumbnails", url })
 *   const sampler = yield* ProportionalSampler.makeWith({ goal: 100 }, sensor)
 *   return yield* sampler.withSampler(Effect.succeed("rendered"), Effect.succeed("skipped"))
 * }).pipe(Effect.scoped)
 * Effect.runPromise(program).then(console.log) // prints: rendered
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (
  options: IoRedisQpsSensorOptions
) => Effect.Effect<QpsSensorService, Options.InvalidOptions, Scope.Scope> = makeOwn

/**
 * A Layer providing a Redis sensor under `QpsSensor`, or under the given key.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: {
  (options: IoRedisQpsSensorOptions): Layer.Layer<QpsSensor, Options.InvalidOptions>
  <I>(
    options: IoRedisQpsSensorOptions,
    tag: Context.Key<I, QpsSensorService>
  ): Layer.Layer<I, Options.InvalidOptions>
} = (
  options: IoRedisQpsSensorOptions,
  tag?: Context.Key<any, QpsSensorService>
): Layer.Layer<any, Options.InvalidOptions> => Layer.effect(tag ?? QpsSensor, makeOwn(options))

/**
 * The Redis key of one second's counter.
 *
 * @since 0.1.0
 * @category utils
 */
export const keyFor: (prefix: string, key: string, second: number) => string = sensorInternal.keyFor

/**
 * A Layer providing a Redis sensor on the application's shared connection
 * (`@sluice/core/IoRedisClient`), the one the quota store and plan source use; the connection
 * options of `options` are ignored.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import * as IoRedisQpsSensor from "@sluice/adaptive/IoRedisQpsSensor"
 * import * as IoRedisClient from "@sluice/core/IoRedisClient"
 * import { Layer } from "effect"
 *
 * const SensorLive = IoRedisQpsSensor.layerShared({ key: "thumbnails" }).pipe(Layer.provide(IoRedisClient.layer()))
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerShared = (
  options: IoRedisQpsSensorOptions
): Layer.Layer<QpsSensor, Options.InvalidOptions, IoRedisClient.IoRedisClient> =>
  Layer.effect(QpsSensor, makeShared(options))

/**
 * {@link layer} with its options read from `Config` (e.g. environment variables): a
 * missing or malformed value fails the layer with `ConfigError`, a bad value with
 * `InvalidOptions` naming the field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import * as IoRedisQpsSensor from "@sluice/adaptive/IoRedisQpsSensor"
 * import { Config } from "effect"
 *
 * const Live = IoRedisQpsSensor.layerConfig(Config.all({ key: Config.String("QPS_KEY"), url: Config.String("REDIS_URL") }))
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<IoRedisQpsSensorOptions>
): Layer.Layer<QpsSensor, Options.InvalidOptions | Config.ConfigError> =>
  Layer.unwrap(Effect.map(config, (options) => layer(options)))

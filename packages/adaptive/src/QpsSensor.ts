/**
 * Where a `ProportionalSampler` gets the measured QPS `M` from.
 *
 * A sensor counts the calls a worker actually sends (`recordUnsafe`) and reports a
 * smoothed rate (`measure`): the average over the last `window` complete seconds
 * (default 2). It is `local` when it counts only this worker, and global when every
 * worker counts into one shared set of per-second counters, so each sees the sum
 * of all of them without knowing how many they are:
 *
 * - {@link makeLocal}: this process only.
 * - {@link makeMemory} with a shared {@link MemoryStore}: workers in one process (and
 *   the simulation's stand-in for Redis).
 * - `IoRedisQpsSensor` (subpath `@sluice/adaptive/IoRedisQpsSensor`): workers anywhere,
 *   through Redis over ioredis; `RedisQpsSensor` (subpath
 *   `@sluice/adaptive/RedisQpsSensor`): the same over Effect's own `Redis` service
 *   (e.g. `NodeRedis`), never loading `ioredis`. The package index loads neither, so
 *   programs without Redis never import `ioredis`.
 *
 * `measure` returns `None` when no reading can be had (no complete second yet, or
 * the store is unreachable); the sampler treats that, and any reading that is not a
 * finite non-negative number, as a missing measurement.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type { Options } from "@sluice/core"
import * as internal from "./internal/qpsSensor.js"
import type * as Config from "effect/Config"
import * as Effect from "effect/Effect"

/**
 * A measurement: `qps` calls per second, taken at `at` (epoch millis, Effect's `Clock`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Reading {
  readonly qps: number
  readonly at: number
}

/**
 * A QPS sensor.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** Counts `n` calls sent at the given clock reading (synchronous, for the hot path). */
  recordUnsafe(nowMillis: number, n: number): void
  /** The smoothed QPS now, or `None` when there is no measurement. */
  readonly measure: Effect.Effect<Option.Option<Reading>>
}

/**
 * The sensor service a `ProportionalSampler` reads.
 *
 * @since 0.1.0
 * @category tags
 */
export class QpsSensor extends Context.Service<QpsSensor, Service>()("@sluice/adaptive/QpsSensor") {}

/**
 * Options of the in-memory sensors: `window`, how many complete seconds the
 * reading averages (positive integer, default 2).
 *
 * @since 0.1.0
 * @category models
 */
export interface MemorySensorOptions {
  readonly window?: number | undefined
}

/**
 * Per-second counters in memory that several sensors can share.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryStore {
  incrementUnsafe(second: number, n: number): void
  /** The sum of the counts of seconds `fromSecond..toSecond` (inclusive). */
  sumUnsafe(fromSecond: number, toSecond: number): number
}

/**
 * Makes a {@link MemoryStore} keeping the last `retainSeconds` (default 120) seconds.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemoryStore: (retainSeconds?: number) => MemoryStore = internal.makeMemoryStore

/**
 * A sensor counting into `store` (a fresh one when omitted). Sensors sharing one
 * store measure their combined QPS.
 *
 * @example
 * ```ts
 * // snippet: compile-only — a fragment of a program, nothing to print
 * import { QpsSensor } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const store = QpsSensor.makeMemoryStore()
 *   const a = yield* QpsSensor.makeMemory({ store })
 *   const b = yield* QpsSensor.makeMemory({ store })
 *   // a.measure and b.measure both report what a and b sent together
 * })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory: (
  options?: MemorySensorOptions & { readonly store?: MemoryStore | undefined }
) => Effect.Effect<Service, Options.InvalidOptions> = internal.makeMemory

/**
 * A sensor of this worker's own QPS.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeLocal = (
  options: MemorySensorOptions = {}
): Effect.Effect<Service, Options.InvalidOptions> => internal.makeMemory(options)

/**
 * A Layer providing a local sensor under {@link QpsSensor}.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { ProportionalSampler, QpsSensor } from "@sluice/adaptive"
 * import { Layer } from "effect"
 *
 * const SamplerLive = ProportionalSampler.layer({ goal: 50 }).pipe(Layer.provide(QpsSensor.layerLocal()))
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layerLocal = (
  options: MemorySensorOptions = {}
): Layer.Layer<QpsSensor, Options.InvalidOptions> => Layer.effect(QpsSensor, internal.makeMemory(options))

/**
 * A Layer providing a sensor on a shared {@link MemoryStore} under {@link QpsSensor}.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (
  store: MemoryStore,
  options: MemorySensorOptions = {}
): Layer.Layer<QpsSensor, Options.InvalidOptions> =>
  Layer.effect(QpsSensor, internal.makeMemory({ ...options, store }))

/**
 * {@link layerLocal} with its options read from `Config` (e.g. environment variables): a
 * missing or malformed value fails the layer with `ConfigError`, a bad value with
 * `InvalidOptions` naming the field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import { QpsSensor } from "@sluice/adaptive"
 * import { Config } from "effect"
 *
 * const Live = QpsSensor.layerConfig(Config.all({ window: Config.Int("QPS_WINDOW_SECONDS").pipe(Config.withDefault(2)) }))
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<MemorySensorOptions>
): Layer.Layer<QpsSensor, Options.InvalidOptions | Config.ConfigError> =>
  Layer.unwrap(Effect.map(config, (options) => layerLocal(options)))

/**
 * The local sensor's layer under the conventional name (same as {@link layerLocal}).
 *
 * @since 0.2.0
 * @category layers
 */
export const layer: (options?: MemorySensorOptions) => Layer.Layer<QpsSensor, Options.InvalidOptions> = (
  options
) => layerLocal(options)

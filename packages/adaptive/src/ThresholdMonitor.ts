/**
 * The server's back-pressure signal. Per operation it keeps an exponentially
 * weighted rate of successful calls (a five-minute window by default, like a load
 * average, built on `EwmaRate` of `@sluice/kernel/stats/Ewma`) and the median latency of
 * successful calls over a recent window. `exceeded` is true while either passes its
 * threshold; a server sets the throttle flag of the wire protocol on its responses
 * then (`x-sluice-throttle: 1`), and clients back off (e.g. with `AimdInterval`).
 *
 * - Only successes are recorded: failures are fast and would pull the median down
 *   and hide an overload.
 * - Thresholds change at run time (`setThresholds`, per operation or for all).
 * - The `rate` threshold is a total for the whole service: each instance compares
 *   its own rate with `rate / instances`; `setInstances` follows scaling. The
 *   latency threshold is a median and is not divided.
 * - The median comes from `LatencyWindow` (`@sluice/kernel`, a sliding-window sketch
 *   within 1% of the exact value) over `latencyWindow`; it is re-read at most once
 *   per second (in between, the last value read is used), so consulting the
 *   monitor on every response stays cheap.
 *
 * Metrics (attributes `name`, `operation`, refreshed at most once per second when the
 * monitor is consulted): `sluice_threshold_monitor_rate` (gauge, per second),
 * `sluice_threshold_monitor_median_ms` (gauge), `sluice_threshold_monitor_exceeded`
 * (gauge, 0 or 1), in the context the monitor was made in (the default registry for
 * `makeUnsafe`).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import type { Pipeable } from "effect/Pipeable"
import type * as Stream from "effect/Stream"
import type { Options } from "@sluice/core"
import * as internal from "./internal/thresholdMonitor.js"
import type * as Config from "effect/Config"

/**
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: unique symbol = internal.TypeId

/**
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * Thresholds of one operation; an absent threshold is never exceeded.
 *
 * - `rate`: successful calls per second, in total across all instances (positive).
 * - `latency`: the median latency of successful calls (positive duration).
 *
 * @since 0.1.0
 * @category models
 */
export interface Thresholds {
  readonly rate?: number | undefined
  readonly latency?: Duration.Input | undefined
}

/**
 * Options, validated by a Schema at construction:
 *
 * - `thresholds`: the default {@link Thresholds} of every operation.
 * - `operations`: per-operation thresholds that replace the default.
 * - `instances`: how many instances share the `rate` threshold (positive integer, default 1).
 * - `window`: the rate's averaging window (default 5 minutes); `tick` (default 5 s,
 *   at most `window`): how often events are folded into the rate.
 * - `latencyWindow` (default 1 minute): what the median is taken over.
 * - `name`: the metrics' `name` attribute (default `"default"`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ThresholdMonitorOptions {
  readonly name?: string | undefined
  readonly thresholds?: Thresholds | undefined
  readonly operations?: Readonly<Record<string, Thresholds>> | undefined
  readonly instances?: number | undefined
  readonly window?: Duration.Input | undefined
  readonly tick?: Duration.Input | undefined
  readonly latencyWindow?: Duration.Input | undefined
}

/**
 * What the monitor sees for one operation.
 *
 * @since 0.1.0
 * @category models
 */
export interface Stats {
  readonly operation: string
  /** Successful calls per second (exponentially weighted). */
  readonly rate: number
  /** Median latency of successful calls, or `undefined` without samples. */
  readonly medianMillis: number | undefined
  /** This instance's rate threshold (`rate / instances`), if any. */
  readonly rateThreshold: number | undefined
  readonly latencyThresholdMillis: number | undefined
  readonly instances: number
  readonly exceeded: boolean
}

/**
 * A threshold monitor. Mutable; owned by the server that made it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service extends Pipeable {
  readonly [TypeId]: TypeId
  readonly name: string
  /** Records one successful call of `operation` that took `latency`. */
  record(operation: string, latency: Duration.Input): Effect.Effect<void>
  /**
   * Runs `self`, timing it with the `Clock`; records it as a call of `operation`
   * only if it succeeds.
   *
   * @since 0.2.0
   */
  withMonitor<A, E, R>(self: Effect.Effect<A, E, R>, operation: string): Effect.Effect<A, E, R>
  /** Is `operation` over one of its thresholds right now? */
  exceeded(operation: string): Effect.Effect<boolean>
  stats(operation: string): Effect.Effect<Stats>
  /** Replaces the thresholds of `operation`, or the default ones when it is omitted. */
  setThresholds(thresholds: Thresholds, operation?: string): Effect.Effect<void, Options.InvalidOptions>
  /** Sets how many instances share the `rate` thresholds. */
  setInstances(instances: number): Effect.Effect<void, Options.InvalidOptions>
  readonly instances: Effect.Effect<number>
  /** {@link ThresholdMonitor.record} with an explicit clock reading and latency, in millis. */
  recordUnsafe(operation: string, nowMillis: number, latencyMillis: number): void
  /** {@link ThresholdMonitor.exceeded} at the given clock reading. */
  exceededUnsafe(operation: string, nowMillis: number): boolean
  /** {@link ThresholdMonitor.stats} at the given clock reading. */
  statsUnsafe(operation: string, nowMillis: number): Stats
  /**
   * Threshold crossings: an operation going over one of its thresholds, or back under
   * all of them. A crossing is seen when the monitor evaluates the operation
   * (`exceeded`, `stats`, the back-pressure middleware on each response), so it is
   * reported at the first evaluation after it happens. A subscriber that falls behind
   * by more than 256 events loses the oldest.
   *
   * @since 0.2.0
   */
  readonly events: Stream.Stream<Event>
}

/**
 * What the monitor reports on {@link Service.events}: `exceeded` is the new state of
 * `operation` (`true`: responses now carry the throttle signal), with the stats that
 * decided it.
 *
 * @since 0.2.0
 * @category models
 */
export type Event = {
  readonly _tag: "Crossing"
  readonly operation: string
  readonly exceeded: boolean
  readonly stats: Stats
}

/**
 * Makes a monitor, failing with `InvalidOptions` naming the bad field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { ThresholdMonitor } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * declare const handleSave: Effect.Effect<string>
 *
 * const program = Effect.gen(function* () {
 *   const monitor = yield* ThresholdMonitor.make({
 *     thresholds: { rate: 6, latency: "200 millis" },
 *     instances: 3 // each instance throttles above 2 per second
 *   })
 *   const body = yield* monitor.withMonitor(handleSave, "save")
 *   const throttle = yield* monitor.exceeded("save") // → x-sluice-throttle: 1
 *   return { body, throttle }
 * })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options: ThresholdMonitorOptions) => Effect.Effect<Service, Options.InvalidOptions> =
  internal.make

/**
 * Synchronous {@link make}; throws `InvalidOptions`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe: (options: ThresholdMonitorOptions) => Service = internal.makeUnsafe

/**
 * Times an effect and records it, if it succeeds, as a call of `operation` on a
 * monitor: the one in context, or `monitor` (data-first or data-last).
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { ThresholdMonitor } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const handled = Effect.succeed("ok").pipe(ThresholdMonitor.withMonitor("save"))
 * declare const monitor: ThresholdMonitor.Service
 * const explicit = ThresholdMonitor.withMonitor(Effect.succeed("ok"), "save", monitor)
 * ```
 * @since 0.1.0
 * @since 0.2.0
 * @category combinators
 */
export const withMonitor: {
  (operation: string, monitor: Service): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  (operation: string): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R | ThresholdMonitor>
  <A, E, R>(self: Effect.Effect<A, E, R>, operation: string, monitor: Service): Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, operation: string): Effect.Effect<A, E, R | ThresholdMonitor>
} = dual(
  (args) => Effect.isEffect(args[0]),
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    operation: string,
    monitor?: Service
  ): Effect.Effect<A, E, R | ThresholdMonitor> =>
    monitor === undefined
      ? Effect.flatMap(ThresholdMonitor, (m) => m.withMonitor(self, operation))
      : monitor.withMonitor(self, operation)
)

/**
 * The default service (a `Context.Service` key).
 *
 * @example
 * ```ts
 * import { ThresholdMonitor } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const monitor = yield* ThresholdMonitor.ThresholdMonitor
 *   return yield* monitor.exceeded("save")
 * }).pipe(Effect.provide(ThresholdMonitor.layer({ thresholds: { rate: 100 } })))
 * Effect.runPromise(program).then(console.log) // prints: false
 * ```
 * @since 0.1.0
 * @category tags
 */
export class ThresholdMonitor extends Context.Service<ThresholdMonitor, Service>()(
  "@sluice/adaptive/ThresholdMonitor"
) {}

/**
 * A Layer that builds a monitor and provides it under {@link ThresholdMonitor},
 * or under the given key.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: {
  (options: ThresholdMonitorOptions): Layer.Layer<ThresholdMonitor, Options.InvalidOptions>
  <I>(options: ThresholdMonitorOptions, tag: Context.Key<I, Service>): Layer.Layer<I, Options.InvalidOptions>
} = (
  options: ThresholdMonitorOptions,
  tag?: Context.Key<any, Service>
): Layer.Layer<any, Options.InvalidOptions> => Layer.effect(tag ?? ThresholdMonitor, internal.make(options))

/**
 * {@link layer} with its options read from `Config` (e.g. environment variables): a
 * missing or malformed value fails the layer with `ConfigError`, a bad value with
 * `InvalidOptions` naming the field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import { ThresholdMonitor } from "@sluice/adaptive"
 * import { Config } from "effect"
 *
 * const Live = ThresholdMonitor.layerConfig(Config.all({ instances: Config.Int("INSTANCES").pipe(Config.withDefault(1)) }))
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<ThresholdMonitorOptions>
): Layer.Layer<ThresholdMonitor, Options.InvalidOptions | Config.ConfigError> =>
  Layer.unwrap(Effect.map(config, (options) => layer(options)))

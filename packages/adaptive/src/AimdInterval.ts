/**
 * An AIMD interval controller for periodic work such as auto-saving a document:
 * the delay between runs follows the server's back-pressure signal.
 *
 * - `signal(true)` (throttled): the interval is multiplied by `factor` (default 2),
 *   up to `max` — the rate is cut multiplicatively.
 * - `signal(false)` (clear): the interval shrinks by `step`, down to `min` — the rate
 *   creeps back.
 *
 * Fair sharing needs one more word. With a fixed `step` on the *interval*, a client
 * that saves more often also shrinks its interval more often, so among many clients
 * following one server signal the fast ones get faster and the slow ones slower: they
 * end up equal only when pinned to a bound. The alternative `rateStep` mode is
 * classic AIMD on the rate (Chiu–Jain): on a clear signal the *rate* `1/interval`
 * grows by `rateStep` per second of the interval just waited (a linear ramp in time,
 * the same for every client), while a throttle still multiplies the interval by
 * `factor`. Since each throttle cuts a fast client by more, clients converge to
 * equal rates; the `autosave` simulation scenario measures this (see its report for
 * both modes).
 *
 * The controller is exposed as a `Schedule` (`schedule`, or `scheduleFrom` which also
 * reads the signal from each run's result), so it plugs into `Effect.repeat` and
 * `Effect.schedule`. Each recurrence waits the *current* interval, read when the
 * recurrence is decided, so a signal takes effect from the next wait on.
 *
 * Metrics (attribute `name`): `sluice_aimd_interval_ms` (gauge, the current interval) and
 * `sluice_aimd_interval_signals` (counter, attribute `throttled`), updated in the context the
 * controller was made in (the default registry for `makeUnsafe`).
 *
 * Signals are plain synchronous state updates (no `Ref`), so calling `signalUnsafe`
 * on every response costs a few arithmetic operations.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import type { Pipeable } from "effect/Pipeable"
import type * as Schedule from "effect/Schedule"
import type { Options } from "@sluice/core"
import * as internal from "./internal/aimdInterval.js"
import type * as Config from "effect/Config"
import * as Effect from "effect/Effect"

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
 * Options, validated by a Schema at construction (a bad value fails with
 * `InvalidOptions` naming the field):
 *
 * - `min`, `max`: positive durations, `min ≤ max`.
 * - exactly one of `step` (positive duration subtracted from the interval on a clear
 *   signal) or `rateStep` (positive number: on a clear signal the rate grows by
 *   `rateStep` saves per second for every second of the interval just waited, i.e.
 *   `1/I ← 1/I + rateStep × I`, `I` in seconds).
 * - `factor`: finite number > 1 (default 2) multiplying the interval on a throttle.
 * - `initial`: where the interval starts (default `min`), within `[min, max]`.
 * - `name`: the metrics' `name` attribute (default `"default"`).
 *
 * @since 0.1.0
 * @category models
 */
export interface AimdIntervalOptions {
  readonly min: Duration.Input
  readonly max: Duration.Input
  readonly step?: Duration.Input | undefined
  readonly rateStep?: number | undefined
  readonly factor?: number | undefined
  readonly initial?: Duration.Input | undefined
  readonly name?: string | undefined
}

/**
 * An AIMD interval controller. Mutable; owned by the client that made it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service extends Pipeable {
  readonly [TypeId]: TypeId
  readonly name: string
  readonly min: Duration.Duration
  readonly max: Duration.Duration
  /** The interval step (`undefined` in `rateStep` mode). */
  readonly step: Duration.Duration | undefined
  readonly rateStep: number | undefined
  readonly factor: number
  /** Feeds one signal in; returns the new interval. */
  signal(throttled: boolean): Effect.Effect<Duration.Duration>
  /** The current interval. */
  readonly interval: Effect.Effect<Duration.Duration>
  /** Synchronous {@link AimdInterval.signal}; returns the new interval in millis. */
  signalUnsafe(throttled: boolean): number
  /** The current interval in millis. */
  intervalUnsafe(): number
  /**
   * Recurs forever, waiting the current interval before each recurrence; outputs
   * the interval it waited. Feed signals with {@link AimdInterval.signal}.
   */
  readonly schedule: Schedule.Schedule<Duration.Duration, unknown>
  /**
   * Like {@link AimdInterval.schedule}, but first feeds `isThrottled(result)` of
   * the run that just finished as a signal.
   */
  scheduleFrom<In>(isThrottled: (input: In) => boolean): Schedule.Schedule<Duration.Duration, In>
}

/**
 * Makes a controller, failing with `InvalidOptions` naming the bad field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { AimdInterval } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * interface Saved {
 *   readonly throttle: boolean
 * }
 * declare const save: Effect.Effect<Saved>
 *
 * const autosave = Effect.gen(function* () {
 *   const aimd = yield* AimdInterval.make({ min: "2 seconds", max: "1 minute", step: "500 millis" })
 *   // save, read the throttle flag of the response, wait the adapted interval, repeat
 *   yield* Effect.repeat(save, aimd.scheduleFrom((response: Saved) => response.throttle))
 * })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options: AimdIntervalOptions) => Effect.Effect<Service, Options.InvalidOptions> =
  internal.make

/**
 * Synchronous {@link make}; throws `InvalidOptions`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe: (options: AimdIntervalOptions) => Service = internal.makeUnsafe

/**
 * Is this value an {@link Service}?
 *
 * @since 0.1.0
 * @category guards
 */
export const isAimdInterval: (u: unknown) => u is Service = internal.isAimdInterval

/**
 * The default service (a `Context.Service` key).
 *
 * @example
 * ```ts
 * // snippet: compile-only — a fragment of a program, nothing to print
 * import { AimdInterval } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const aimd = yield* AimdInterval.AimdInterval
 *   yield* aimd.signal(true)
 * }).pipe(Effect.provide(AimdInterval.layer({ min: "1 second", max: "1 minute", step: "1 second" })))
 * ```
 * @since 0.1.0
 * @category tags
 */
export class AimdInterval extends Context.Service<AimdInterval, Service>()("@sluice/adaptive/AimdInterval") {}

/**
 * A Layer that builds a controller and provides it under {@link AimdInterval},
 * or under the given key.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: {
  (options: AimdIntervalOptions): Layer.Layer<AimdInterval, Options.InvalidOptions>
  <I>(options: AimdIntervalOptions, tag: Context.Key<I, Service>): Layer.Layer<I, Options.InvalidOptions>
} = (
  options: AimdIntervalOptions,
  tag?: Context.Key<any, Service>
): Layer.Layer<any, Options.InvalidOptions> => Layer.effect(tag ?? AimdInterval, internal.make(options))

/**
 * {@link layer} with its options read from `Config` (e.g. environment variables): a
 * missing or malformed value fails the layer with `ConfigError`, a bad value with
 * `InvalidOptions` naming the field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import { AimdInterval } from "@sluice/adaptive"
 * import { Config } from "effect"
 *
 * const Live = AimdInterval.layerConfig(Config.all({ min: Config.Duration("SAVE_MIN"), max: Config.Duration("SAVE_MAX"), step: Config.Duration("SAVE_STEP") }))
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<AimdIntervalOptions>
): Layer.Layer<AimdInterval, Options.InvalidOptions | Config.ConfigError> =>
  Layer.unwrap(Effect.map(config, (options) => layer(options)))

/**
 * An AIMD interval controller for periodic work such as auto-saving a document:
 * the delay between runs follows the server's back-pressure signal.
 *
 * - `signal(true)` (throttled): the interval is multiplied by `factor` (default 2),
 *   up to `max` — the rate is cut multiplicatively.
 * - `signal(false)` (clear): the interval shrinks by `step`, down to `min` — the rate
 *   creeps back.
 *
 * The controller is exposed as a `Schedule` (`schedule`, or `scheduleFrom` which also
 * reads the signal from each run's result), so it plugs into `Effect.repeat` and
 * `Effect.schedule`. Each recurrence waits the *current* interval, read when the
 * recurrence is decided, so a signal takes effect from the next wait on.
 *
 * Many clients that follow the same signal converge: every throttle multiplies all
 * intervals by the same factor and every clear moves them by the same step, so
 * clients that hit a bound (`min` or `max`) collapse onto it and stay together from
 * then on; the `autosave` simulation scenario measures the fairness of the shared
 * capacity.
 *
 * Metrics (tagged `name`): `sluice_aimd_interval_ms` (gauge, the current interval) and
 * `sluice_aimd_interval_signals` (counter, tagged `throttled`).
 *
 * Signals are plain synchronous state updates (no `Ref`), so calling `unsafeSignal`
 * on every response costs a few arithmetic operations.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Pipeable } from "effect/Pipeable"
import type * as Schedule from "effect/Schedule"
import type { Options } from "@sluice/core"
import * as internal from "./internal/aimdInterval.js"

/**
 * @since 0.1.0
 */
export const TypeId: unique symbol = internal.TypeId

/**
 * @since 0.1.0
 */
export type TypeId = typeof TypeId

/**
 * Options, validated by a Schema at construction (a bad value fails with
 * `InvalidOptions` naming the field):
 *
 * - `min`, `max`: positive durations, `min ≤ max`.
 * - `step`: positive duration subtracted on a clear signal.
 * - `factor`: finite number > 1 (default 2) multiplying the interval on a throttle.
 * - `initial`: where the interval starts (default `min`), within `[min, max]`.
 * - `name`: tags the metrics (default `"default"`).
 *
 * @since 0.1.0
 */
export interface AimdIntervalOptions {
  readonly min: Duration.DurationInput
  readonly max: Duration.DurationInput
  readonly step: Duration.DurationInput
  readonly factor?: number | undefined
  readonly initial?: Duration.DurationInput | undefined
  readonly name?: string | undefined
}

/**
 * The options Schema.
 *
 * @since 0.1.0
 */
export const AimdIntervalOptions = internal.AimdIntervalOptions

/**
 * An AIMD interval controller. Mutable; owned by the client that made it.
 *
 * @since 0.1.0
 */
export interface AimdInterval extends Pipeable {
  readonly [TypeId]: TypeId
  readonly name: string
  readonly min: Duration.Duration
  readonly max: Duration.Duration
  readonly step: Duration.Duration
  readonly factor: number
  /** Feeds one signal in; returns the new interval. */
  signal(throttled: boolean): Effect.Effect<Duration.Duration>
  /** The current interval. */
  readonly interval: Effect.Effect<Duration.Duration>
  /** Synchronous {@link AimdInterval.signal}; returns the new interval in millis. */
  unsafeSignal(throttled: boolean): number
  /** The current interval in millis. */
  unsafeInterval(): number
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
 * import { AimdInterval } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * declare const save: Effect.Effect<{ readonly throttle: boolean }>
 *
 * const autosave = Effect.gen(function* () {
 *   const aimd = yield* AimdInterval.make({ min: "2 seconds", max: "1 minute", step: "500 millis" })
 *   // save, read the throttle flag of the response, wait the adapted interval, repeat
 *   yield* Effect.repeat(save, aimd.scheduleFrom((response) => response.throttle))
 * })
 * ```
 * @since 0.1.0
 */
export const make: (options: AimdIntervalOptions) => Effect.Effect<AimdInterval, Options.InvalidOptions> =
  internal.make

/**
 * Synchronous {@link make}; throws `InvalidOptions`.
 *
 * @since 0.1.0
 */
export const unsafeMake: (options: AimdIntervalOptions) => AimdInterval = internal.unsafeMake

/**
 * Is this value an {@link AimdInterval}?
 *
 * @since 0.1.0
 */
export const isAimdInterval: (u: unknown) => u is AimdInterval = internal.isAimdInterval

/**
 * The default service tag.
 *
 * @example
 * ```ts
 * import { AimdInterval } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const aimd = yield* AimdInterval.AimdIntervalTag
 *   yield* aimd.signal(true)
 * }).pipe(Effect.provide(AimdInterval.layer({ min: "1 second", max: "1 minute", step: "1 second" })))
 * ```
 * @since 0.1.0
 */
export class AimdIntervalTag extends Context.Tag("@sluice/adaptive/AimdInterval")<
  AimdIntervalTag,
  AimdInterval
>() {}

/**
 * A Layer that builds a controller and provides it under {@link AimdIntervalTag},
 * or under the given tag.
 *
 * @since 0.1.0
 */
export const layer: {
  (options: AimdIntervalOptions): Layer.Layer<AimdIntervalTag, Options.InvalidOptions>
  <I>(options: AimdIntervalOptions, tag: Context.Tag<I, AimdInterval>): Layer.Layer<I, Options.InvalidOptions>
} = (
  options: AimdIntervalOptions,
  tag?: Context.Tag<any, AimdInterval>
): Layer.Layer<any, Options.InvalidOptions> => Layer.effect(tag ?? AimdIntervalTag, internal.make(options))

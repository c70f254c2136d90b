/**
 * A proportional sampler: many workers jointly keep a backend under a goal QPS `G`
 * without knowing how many of them there are.
 *
 * A `QpsSensor` (from the context) measures the smoothed QPS `M` actually sent —
 * this worker's alone with a local sensor, everybody's with a shared (Redis) one.
 * Every `updatePeriod`, stretched by a random factor in `[1 − jitter, 1 + jitter]`
 * per worker (Effect's `Random`, so workers do not update in lock step), the share
 * of calls sent becomes
 *
 * ```
 * r ← clamp(r × G / M, minRatio, 1)        (M = 0 gives r = 1)
 * ```
 *
 * and each call is sent with probability `r` (systematic sampling with a random
 * start: over any `n` calls the share sent is within `1/n` of `r`), otherwise
 * skipped — the caller decides what a skipped call returns (`sampled(self,
 * onSkip)`); a server answers `204 No Content`.
 *
 * The lower bound `minRatio` (default 0.001) exists because `r = 0` would be
 * absorbing: nothing sent, nothing measured, nothing learned.
 *
 * Failure modes (explicit, never silent):
 *
 * - **Stale sensor.** A reading that is missing (`None`, e.g. Redis unreachable),
 *   not a finite non-negative number (NaN, negative, infinite), or older than
 *   `staleAfter` (default 3 update periods) is never fed into the controller. For
 *   `staleAfter` after the last good reading, `r` is held. After that the sampler
 *   is in mode `"stale"`: at each update `r` decays by `staleDecay` (default 0.8)
 *   toward `staleFloor` (default 0.1) and stops there; it is never raised, so a
 *   dead sensor neither opens the flood gates (the last limit keeps applying and
 *   tightens) nor stops all traffic (`r` stays ≥ `min(r, staleFloor)` > 0). The
 *   first good reading resumes normal control from the current `r`.
 * - **Goal 0.** Accepted, and means *pause*: mode `"paused"`, `r = minRatio`, so only
 *   a trickle of probe calls (0.1% by default) goes out. `setGoal` with a positive
 *   goal resumes control from `minRatio` upward.
 *
 * Metrics (attribute `name`, flushed at every update): `sluice_sampler_sent` and
 * `sluice_sampler_skipped` (counters), `sluice_sampler_ratio` (gauge, `r`),
 * `sluice_sampler_stale` (gauge, 1 while stale), in the context the sampler was made in
 * (its `MetricRegistry`). Each update runs in the span
 * `sluice.sampler.update`; the per-call path is a few arithmetic operations.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import type { Pipeable } from "effect/Pipeable"
import type * as Scope from "effect/Scope"
import type { Options } from "@sluice/core"
import * as internal from "./internal/proportionalSampler.js"
import type { QpsSensor, Reading, Service as QpsSensorService } from "./QpsSensor.js"
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
 * Options, validated by a Schema at construction (a bad value fails with
 * `InvalidOptions` naming the field):
 *
 * - `goal`: the goal QPS `G`, finite and ≥ 0 (0 pauses, see the module doc).
 * - `updatePeriod`: positive duration between controller updates (default 5 s);
 *   keep it longer than the sensor's window so each update sees the last one's effect.
 * - `jitter`: in `[0, 1)`, default 0.1.
 * - `initialRatio`: `r` at start, in `(0, 1]` (default 1; a worker joining a busy
 *   fleet should start low, e.g. 0.02, to avoid an overshoot before its first update).
 * - `minRatio`: lower bound of `r`, in `(0, 1]`, default 0.001.
 * - `staleAfter` (default 3 × `updatePeriod`), `staleFloor` (default 0.1),
 *   `staleDecay` (default 0.8): the stale-sensor behaviour.
 * - `name`: the metrics' `name` attribute (default `"default"`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ProportionalSamplerOptions {
  readonly goal: number
  readonly name?: string | undefined
  readonly updatePeriod?: Duration.Input | undefined
  readonly jitter?: number | undefined
  readonly initialRatio?: number | undefined
  readonly minRatio?: number | undefined
  readonly staleAfter?: Duration.Input | undefined
  readonly staleFloor?: number | undefined
  readonly staleDecay?: number | undefined
}

/**
 * `"tracking"`: following the sensor; `"stale"`: the sensor is stale; `"paused"`: goal 0.
 *
 * @since 0.1.0
 * @category models
 */
export type Mode = "tracking" | "stale" | "paused"

/**
 * A snapshot of a sampler.
 *
 * @since 0.1.0
 * @category models
 */
export interface SamplerState {
  readonly ratio: number
  readonly goal: number
  readonly mode: Mode
  readonly lastReading: Reading | undefined
  /** When the last good reading was taken (epoch millis), or when the sampler started. */
  readonly lastGoodAt: number
  readonly sent: number
  readonly skipped: number
}

/**
 * A proportional sampler. Mutable; owned by the worker that made it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service extends Pipeable {
  readonly [TypeId]: TypeId
  readonly name: string
  /** Decides for one call: `true` = send it (and count it in the sensor). */
  readonly sample: Effect.Effect<boolean>
  /**
   * Runs `self` if the call is sampled in, `onSkip` otherwise.
   *
   * @since 0.2.0
   */
  withSampler<A, E, R, B, E2, R2>(
    self: Effect.Effect<A, E, R>,
    onSkip: Effect.Effect<B, E2, R2>
  ): Effect.Effect<A | B, E | E2, R | R2>
  /** The current share `r`. */
  readonly ratio: Effect.Effect<number>
  readonly state: Effect.Effect<SamplerState>
  /** Runs one controller update now (the background loop does this every period). */
  readonly update: Effect.Effect<void>
  /** Changes the goal QPS at run time. */
  setGoal(goal: number): Effect.Effect<void, Options.InvalidOptions>
  /** {@link ProportionalSampler.sample} at the given clock reading. */
  sampleUnsafe(nowMillis: number): boolean
  ratioUnsafe(): number
}

/**
 * Makes a sampler reading the `QpsSensor` service and starts its update loop,
 * which runs until the scope closes.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { ProportionalSampler, QpsSensor } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * declare const callBackend: Effect.Effect<string>
 *
 * const program = Effect.gen(function* () {
 *   const sampler = yield* ProportionalSampler.make({ goal: 100, updatePeriod: "5 seconds" })
 *   // skipped work returns null here; an HTTP server would answer 204
 *   return yield* sampler.withSampler(callBackend, Effect.succeed(null))
 * }).pipe(Effect.scoped, Effect.provide(QpsSensor.layerLocal()))
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (
  options: ProportionalSamplerOptions
) => Effect.Effect<Service, Options.InvalidOptions, Scope.Scope | QpsSensor> = internal.make

/**
 * {@link make} with an explicit sensor instead of the `QpsSensor` service.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeWith: (
  options: ProportionalSamplerOptions,
  sensor: QpsSensorService
) => Effect.Effect<Service, Options.InvalidOptions, Scope.Scope> = internal.makeWith

/**
 * Runs an effect through a sampler: `self` when the call is sampled in, `onSkip`
 * otherwise. The sampler is the one in context unless `options.sampler` is given
 * (data-first or data-last).
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { ProportionalSampler } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const work = Effect.succeed(42).pipe(ProportionalSampler.withSampler({ onSkip: Effect.succeed(undefined) }))
 * declare const sampler: ProportionalSampler.Service
 * const explicit = ProportionalSampler.withSampler(Effect.succeed(42), { onSkip: Effect.void, sampler })
 * ```
 * @since 0.2.0
 * @category combinators
 */
export const withSampler: {
  <B, E2, R2>(options: {
    readonly onSkip: Effect.Effect<B, E2, R2>
    readonly sampler: Service
  }): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A | B, E | E2, R | R2>
  <B, E2, R2>(options: {
    readonly onSkip: Effect.Effect<B, E2, R2>
    readonly sampler?: undefined
  }): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A | B, E | E2, R | R2 | ProportionalSampler>
  <A, E, R, B, E2, R2>(
    self: Effect.Effect<A, E, R>,
    options: { readonly onSkip: Effect.Effect<B, E2, R2>; readonly sampler: Service }
  ): Effect.Effect<A | B, E | E2, R | R2>
  <A, E, R, B, E2, R2>(
    self: Effect.Effect<A, E, R>,
    options: { readonly onSkip: Effect.Effect<B, E2, R2>; readonly sampler?: undefined }
  ): Effect.Effect<A | B, E | E2, R | R2 | ProportionalSampler>
} = dual(
  2,
  <A, E, R, B, E2, R2>(
    self: Effect.Effect<A, E, R>,
    options: { readonly onSkip: Effect.Effect<B, E2, R2>; readonly sampler?: Service | undefined }
  ): Effect.Effect<A | B, E | E2, R | R2 | ProportionalSampler> =>
    options.sampler === undefined
      ? Effect.flatMap(ProportionalSampler, (sampler) => sampler.withSampler(self, options.onSkip))
      : options.sampler.withSampler(self, options.onSkip)
)

/**
 * The default service (a `Context.Service` key).
 *
 * @since 0.1.0
 * @category tags
 */
export class ProportionalSampler extends Context.Service<ProportionalSampler, Service>()(
  "@sluice/adaptive/ProportionalSampler"
) {}

/**
 * A Layer that builds a sampler (its update loop lives as long as the Layer) and
 * provides it under {@link ProportionalSampler}, or under the given key.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { ProportionalSampler } from "@sluice/adaptive"
 * import * as IoRedisQpsSensor from "@sluice/adaptive/IoRedisQpsSensor"
 * import { Layer } from "effect"
 *
 * const SamplerLive = ProportionalSampler.layer({ goal: 100 }).pipe(
 *   Layer.provide(IoRedisQpsSensor.layer({ key: "exports" }))
 * )
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layer: {
  (options: ProportionalSamplerOptions): Layer.Layer<ProportionalSampler, Options.InvalidOptions, QpsSensor>
  <I>(
    options: ProportionalSamplerOptions,
    tag: Context.Key<I, Service>
  ): Layer.Layer<I, Options.InvalidOptions, QpsSensor>
} = (
  options: ProportionalSamplerOptions,
  tag?: Context.Key<any, Service>
): Layer.Layer<any, Options.InvalidOptions, QpsSensor> =>
  Layer.effect(tag ?? ProportionalSampler, internal.make(options))

/**
 * {@link layer} with its options read from `Config` (e.g. environment variables): a
 * missing or malformed value fails the layer with `ConfigError`, a bad value with
 * `InvalidOptions` naming the field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import { ProportionalSampler } from "@sluice/adaptive"
 * import { Config } from "effect"
 *
 * const Live = ProportionalSampler.layerConfig(Config.all({ goal: Config.Number("EXPORT_GOAL_QPS") }))
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<ProportionalSamplerOptions>
): Layer.Layer<ProportionalSampler, Options.InvalidOptions | Config.ConfigError, QpsSensor> =>
  Layer.unwrap(Effect.map(config, (options) => layer(options)))

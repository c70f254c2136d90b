/**
 * Exponentially weighted statistics driven by Effect's `Clock`.
 *
 * - `Ewma`: a time-decayed moving average of samples (e.g. latency, utilization):
 *   a sample taken `dt` after the previous one has weight `1 - exp(-dt / tau)`.
 * - `EwmaRate`: an exponentially weighted events-per-second rate, like the classic
 *   1/5/15-minute load averages: events are counted and folded into the rate once
 *   per tick (default 5 s) with weight `1 - exp(-tick / window)`.
 *
 * The `unsafe*` methods take the clock reading (epoch millis) explicitly, for hot paths.
 * The arithmetic is `@sluice/kernel/stats/Ewma`; this module binds it to the `Clock`.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as internal from "./internal/ewma.js"
import type { InvalidOptions } from "./Options.js"

/**
 * A time-decayed moving average. Mutable; owned by the service that made it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Ewma {
  readonly tau: Duration.Duration
  /** Folds a sample in at the given clock reading. The first sample sets the value. */
  readonly unsafeUpdate: (nowMillis: number, sample: number) => void
  /** The current average, or `undefined` before the first sample. */
  readonly unsafeValue: () => number | undefined
}

/**
 * Options of an {@link Ewma}: `tau`, the time constant (positive duration); after
 * `tau` a step change has moved the average by about 63%.
 *
 * @since 0.1.0
 * @category models
 */
export interface EwmaOptions {
  /** The time constant: a sample's weight decays by 1/e over `tau`. */
  readonly tau: Duration.Input
}

/**
 * Makes an {@link Ewma}.
 *
 * @example
 * ```ts
 * import { Ewma } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const avg = yield* Ewma.make({ tau: "10 seconds" })
 *   yield* Ewma.update(avg, 42)
 *   console.log(yield* Ewma.value(avg)) // prints: 42
 * })
 * Effect.runPromise(program)
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options: EwmaOptions) => Effect.Effect<Ewma, InvalidOptions> = internal.make

/**
 * Synchronous {@link make}; throws `InvalidOptions`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unsafeMake: (options: EwmaOptions) => Ewma = internal.unsafeMake

/**
 * Folds a sample in now.
 *
 * @since 0.1.0
 * @category utils
 */
export const update: {
  (sample: number): (self: Ewma) => Effect.Effect<void>
  (self: Ewma, sample: number): Effect.Effect<void>
} = internal.update

/**
 * The current average (0 before the first sample).
 *
 * @since 0.1.0
 * @category getters
 */
export const value = (self: Ewma): Effect.Effect<number> => internal.value(self)

/**
 * An exponentially weighted rate of events per second. Mutable; owned by the
 * service that made it.
 *
 * @since 0.1.0
 * @category models
 */
export interface EwmaRate {
  readonly window: Duration.Duration
  readonly tick: Duration.Duration
  /** Counts `n` events (default 1) at the given clock reading. */
  readonly unsafeMark: (nowMillis: number, n?: number) => void
  /** Events per second at the given clock reading. */
  readonly unsafeRate: (nowMillis: number) => number
}

/**
 * Options of an {@link EwmaRate}: `window` (e.g. `"5 minutes"`) and `tick`
 * (default 5 s, must not exceed the window).
 *
 * @since 0.1.0
 * @category models
 */
export interface EwmaRateOptions {
  readonly window: Duration.Input
  /** Default 5 seconds; must not exceed `window`. */
  readonly tick?: Duration.Input | undefined
}

/**
 * Makes an {@link EwmaRate}.
 *
 * @example
 * ```ts
 * import { Ewma } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const rate = yield* Ewma.makeRate({ window: "5 minutes" })
 *   yield* Ewma.mark(rate)
 *   // 0 until the first tick (every 5 seconds by default) folds the mark in
 *   console.log(yield* Ewma.rate(rate)) // prints: 0
 * })
 * Effect.runPromise(program)
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const makeRate: (options: EwmaRateOptions) => Effect.Effect<EwmaRate, InvalidOptions> =
  internal.makeRate

/**
 * Synchronous {@link makeRate}; throws `InvalidOptions`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unsafeMakeRate: (options: EwmaRateOptions) => EwmaRate = internal.unsafeMakeRate

/**
 * Counts `n` events (default 1) now.
 *
 * @since 0.1.0
 * @category utils
 */
export const mark: {
  (n?: number): (self: EwmaRate) => Effect.Effect<void>
  (self: EwmaRate, n?: number): Effect.Effect<void>
} = internal.mark

/**
 * Events per second now.
 *
 * @since 0.1.0
 * @category getters
 */
export const rate: (self: EwmaRate) => Effect.Effect<number> = internal.rate

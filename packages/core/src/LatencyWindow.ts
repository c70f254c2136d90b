/**
 * A latency window: median, p99 and any other quantile of the latencies recorded
 * over a sliding time window, in bounded memory. Time comes only from Effect's
 * `Clock`, so `TestClock` and the simulation drive it.
 *
 * Each sub-window holds a log-bucketed histogram in the style of DDSketch: with
 * relative accuracy `α` (default 0.01), bucket `i` holds the values in
 * `(γ^(i-1), γ^i]` where `γ = (1 + α) / (1 − α)`, and answers with
 * `2γ^i / (γ + 1)`. **Guarantee:** for every `q`, the answer is within a relative
 * error `α` of the exact quantile, the recorded value of 0-based rank
 * `⌊q · (count − 1)⌋` in the window, for values in `[1e-4, 1e8]` milliseconds.
 * Values below `1e-4` ms are answered as `0`; values above `1e8` ms (about 28
 * hours) are clamped to it; negative, `NaN` and infinite values are ignored.
 *
 * The window is rotated like `RollingCounter`: `window` is sliced into
 * `subWindows` (default 6) sub-windows of width `w = window / subWindows`, and a
 * value recorded at `t` counts at `now` while `floor(t / w) > floor(now / w) − subWindows`.
 * Memory: each sub-window stores only the range of buckets it has seen, about
 * `ln(max / min) / ln(γ)` numbers (≈ 350 for latencies spanning 1 ms to 1 s at 1%).
 * Recording is O(1) amortised; a quantile scans the buckets in use. The sketch is
 * `@sluice/kernel/stats/LatencyWindow`; this module binds it to the `Clock`.
 *
 * Why the bound holds: a value `v` in `(γ^(i-1), γ^i]` is answered with
 * `r = 2γ^i / (γ + 1)`; the relative error `|r − v| / v` is largest at the two ends
 * of the bucket, where it equals `(γ − 1) / (γ + 1) = α`. The bucket holding the
 * value of rank `⌊q · (count − 1)⌋` is the first whose cumulative count exceeds
 * `q · (count − 1)`, which is the one a query answers from.
 *
 * Why not `hdr-histogram-js`: it is not a dependency of this repository (adding one
 * was out of scope), it has fixed-interval histograms rather than a sliding window
 * (one would rotate and merge whole histograms), and its precision is given in
 * significant digits over a pre-declared range rather than as a relative error.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { Pipeable } from "effect/Pipeable"
import * as internal from "./internal/latencyWindow.js"
import type { InvalidOptions } from "./Options.js"

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
 * A latency window. Mutable; owned by the service that made it.
 *
 * @since 0.1.0
 * @category models
 */
export interface LatencyWindow extends Pipeable {
  readonly [TypeId]: TypeId
  readonly window: Duration.Duration
  readonly subWindows: number
  readonly relativeAccuracy: number
  /** Records a latency in milliseconds at the given clock reading (epoch millis). */
  readonly unsafeRecord: (nowMillis: number, millis: number) => void
  /**
   * The `q`-quantile (`q` clamped to `[0, 1]`) over the window ending at the given
   * clock reading; `undefined` when the window is empty or `q` is `NaN`.
   */
  readonly unsafeQuantile: (nowMillis: number, q: number) => number | undefined
  /** How many latencies the window holds at the given clock reading. */
  readonly unsafeCount: (nowMillis: number) => number
  /** Forgets everything. */
  readonly unsafeReset: () => void
}

/**
 * Options: `window` (a positive duration), `subWindows` (a positive integer,
 * default 6) and `relativeAccuracy` (in `(0, 1)`, default 0.01).
 *
 * @since 0.1.0
 * @category models
 */
export interface LatencyWindowOptions {
  readonly window: Duration.Input
  /** Default 6. */
  readonly subWindows?: number | undefined
  /** Default 0.01. */
  readonly relativeAccuracy?: number | undefined
}

/**
 * Makes a latency window, failing with `InvalidOptions` naming the bad field.
 *
 * @example
 * ```ts
 * import { LatencyWindow } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const latencies = yield* LatencyWindow.make({ window: "1 minute", subWindows: 6 })
 *   yield* LatencyWindow.record(latencies, 12.5)
 *   const median = yield* LatencyWindow.median(latencies) // Option.some(≈ 12.5, within 1%)
 *   console.log(String(median)) // prints: some(12.5…)
 * })
 * Effect.runPromise(program)
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options: LatencyWindowOptions) => Effect.Effect<LatencyWindow, InvalidOptions> =
  internal.make

/**
 * Makes a latency window synchronously; throws `InvalidOptions`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unsafeMake: (options: LatencyWindowOptions) => LatencyWindow = internal.unsafeMake

/**
 * Records a latency in milliseconds, now.
 *
 * @since 0.1.0
 * @category utils
 */
export const record: {
  (millis: number): (self: LatencyWindow) => Effect.Effect<void>
  (self: LatencyWindow, millis: number): Effect.Effect<void>
} = internal.record

/**
 * The `q`-quantile over the window ending now; `None` when the window is empty.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { LatencyWindow } from "@sluice/core"
 *
 * declare const latencies: LatencyWindow.LatencyWindow
 * const p90 = LatencyWindow.quantile(latencies, 0.9)
 * const p999 = latencies.pipe(LatencyWindow.quantile(0.999))
 * ```
 * @since 0.1.0
 * @category getters
 */
export const quantile: {
  (q: number): (self: LatencyWindow) => Effect.Effect<Option.Option<number>>
  (self: LatencyWindow, q: number): Effect.Effect<Option.Option<number>>
} = internal.quantile

/**
 * The median over the window ending now.
 *
 * @since 0.1.0
 * @category getters
 */
export const median: (self: LatencyWindow) => Effect.Effect<Option.Option<number>> = internal.median

/**
 * The 99th percentile over the window ending now.
 *
 * @since 0.1.0
 * @category getters
 */
export const p99: (self: LatencyWindow) => Effect.Effect<Option.Option<number>> = internal.p99

/**
 * How many latencies the window holds now.
 *
 * @since 0.1.0
 * @category getters
 */
export const count: (self: LatencyWindow) => Effect.Effect<number> = internal.count

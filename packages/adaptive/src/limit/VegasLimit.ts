/**
 * A delay-based concurrency limit in the style of TCP VegasLimit (docs/ARCHITECTURE.md §5).
 *
 * It learns the no-load latency (the smallest round-trip time of a success)
 * and estimates how many requests wait in the backend's queue:
 * `queued = limit × (1 − noLoadRtt / rtt)`. With `step = max(1, log10(limit))`:
 * no queueing (`queued ≤ step`) grows the limit by `beta × step`, a small queue
 * (`queued < alpha × step`) by `step`, a long one (`queued > beta × step`)
 * shrinks it by `step`, and in between it holds. A success that sets a new
 * minimum only moves the baseline and leaves the limit unchanged, as Netflix's
 * `VegasLimit` does: it is the reference, not a measurement against it. So it settles where a little
 * queueing shows up, before errors do. It decides at most once per round trip
 * (a request sent before the last change measures the old limit), and only a
 * limit that is used (in-flight ≥ limit / 2) grows.
 *
 * Drops come back fast, so their latency is never taken as the no-load
 * latency; instead a drop multiplies the limit by `backoffRatio`, once per
 * burst (drops from requests that were in flight at the previous back-off are
 * ignored, as in the congestion window).
 *
 * A queue that never drains would hide the true no-load latency, and a
 * backend may become slower for good: every `probeMultiplier × limit`
 * successes the limit is halved for one round trip and the no-load latency is
 * re-learned from that round. Deterministic: no randomness.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type { Options } from "@sluice/core"
import * as internal from "../internal/limit/vegasLimit.js"
import type { Bounds, BoundsOptions, Factory, LimitAlgorithm } from "./LimitAlgorithm.js"

/**
 * Options: the shared bounds ({@link BoundsOptions}: `initial` 20, `minLimit` 1,
 * `maxLimit` 1000; a default `initial` above `maxLimit` is clamped), `alpha` (3) and
 * `beta` (6) in units of `log10(limit)` with `alpha < beta`, `smoothing` in (0, 1]
 * (1 = no smoothing), `backoffRatio` in (0, 1) on a drop (0.9), and `probeMultiplier` (30).
 *
 * @since 0.1.0
 * @category schemas
 * @category models
 */
export interface VegasLimitOptions extends BoundsOptions {
  readonly alpha?: number | undefined
  readonly beta?: number | undefined
  readonly smoothing?: number | undefined
  readonly backoffRatio?: number | undefined
  readonly probeMultiplier?: number | undefined
}

/**
 * Options after defaults (what the algorithm runs with).
 *
 * @since 0.1.0
 * @category models
 */
export interface VegasLimitConfig extends Bounds {
  readonly alpha: number
  readonly beta: number
  readonly smoothing: number
  readonly backoffRatio: number
  readonly probeMultiplier: number
}

/**
 * A VegasLimit limit. `noLoadRtt` is the learned no-load latency in milliseconds.
 *
 * @since 0.1.0
 * @category models
 */
export interface VegasLimit extends LimitAlgorithm {
  readonly options: VegasLimitConfig
  readonly noLoadRtt: number | undefined
  readonly ignoreBelow: number
  /** True while a probe round runs at half the limit. */
  readonly probing: boolean
}

/**
 * Makes a VegasLimit limit, failing with `InvalidOptions` on bad options.
 *
 * @example
 * ```ts
 * import { VegasLimit } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const vegas = yield* VegasLimit.make({ initial: 10 })
 *   vegas.onSample({ id: 0, nextId: 1, outcome: "success", rtt: 100, inFlight: 10, now: 0 }) // learns 100 ms
 *   console.log(vegas.limit) // prints: 10
 * })
 * Effect.runPromise(program)
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options?: VegasLimitOptions) => Effect.Effect<VegasLimit, Options.InvalidOptions> =
  internal.make

/**
 * Makes a VegasLimit limit synchronously; throws `InvalidOptions`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe: (options?: VegasLimitOptions) => VegasLimit = internal.makeUnsafe

/**
 * Validates the options now (throws `InvalidOptions`) and returns a factory
 * that makes one fresh limit per limiter key.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer for an app to provide
 * import { ConcurrencyLimiter, VegasLimit } from "@sluice/adaptive"
 *
 * const layer = ConcurrencyLimiter.layer({ algorithm: VegasLimit.factory({ maxLimit: 200 }) })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const factory: (options?: VegasLimitOptions) => Factory = internal.factory

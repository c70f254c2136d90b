/**
 * The congestion window: TCP's answer to "how much may I send?", applied to
 * requests instead of bytes (docs/ARCHITECTURE.md §5).
 *
 * State: `cwnd` (start 20), `ssthresh` (start 1024) and the set of requests
 * whose errors are ignored. On a success `cwnd` grows by 1 below `ssthresh`
 * (slow start) and by `1 / cwnd` above it (congestion avoidance), but never
 * beyond in-flight + 1, so idle capacity does not inflate it. On an overload
 * error from a request outside the ignored set, `ssthresh = cwnd × backoffRatio` and
 * `cwnd` becomes the initial value (Tahoe) or the new `ssthresh` (Reno); the
 * ignored set becomes every request in flight at that moment, so one burst of
 * errors counts once.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type { Options } from "@sluice/core"
import * as internal from "../internal/limit/congestionWindow.js"
import type { Bounds, BoundsOptions, Factory, LimitAlgorithm } from "./LimitAlgorithm.js"

/**
 * Options: the shared bounds ({@link BoundsOptions}: `initial` window 20, `minLimit` 1,
 * `maxLimit` 1000), `ssthresh` (1024), `backoffRatio` in
 * (0, 1) applied on a drop (default 0.5 classic; 0.9 for a stable capacity), `variant`
 * `"tahoe"` or `"reno"` (default).
 *
 * @since 0.1.0
 * @category schemas
 * @category models
 */
export interface CongestionWindowOptions extends BoundsOptions {
  readonly ssthresh?: number | undefined
  readonly backoffRatio?: number | undefined
  readonly variant?: "tahoe" | "reno" | undefined
}

/**
 * Options after defaults (what the algorithm runs with).
 *
 * @since 0.1.0
 * @category models
 */
export interface CongestionWindowConfig extends Bounds {
  readonly ssthresh: number
  readonly backoffRatio: number
  readonly variant: "tahoe" | "reno"
}

/**
 * A congestion window. `limit` is `cwnd`; `ignoreBelow` is the ignored set as a
 * permit id: drops from permits with a smaller id belong to an already
 * counted burst.
 *
 * @since 0.1.0
 * @category models
 */
export interface CongestionWindow extends LimitAlgorithm {
  readonly options: CongestionWindowConfig
  readonly cwnd: number
  readonly ssthresh: number
  readonly ignoreBelow: number
}

/**
 * Makes a congestion window, failing with `InvalidOptions` on bad options.
 *
 * @example
 * ```ts
 * import { CongestionWindow } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const cw = yield* CongestionWindow.make({ variant: "tahoe", backoffRatio: 0.9 })
 *   console.log(cw.limit) // prints: 20
 * })
 * Effect.runPromise(program)
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (
  options?: CongestionWindowOptions
) => Effect.Effect<CongestionWindow, Options.InvalidOptions> = internal.make

/**
 * Makes a congestion window synchronously; throws `InvalidOptions`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe: (options?: CongestionWindowOptions) => CongestionWindow = internal.makeUnsafe

/**
 * Validates the options now (throws `InvalidOptions`) and returns a factory
 * that makes one fresh window per limiter key.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer for an app to provide
 * import { CongestionWindow, ConcurrencyLimiter } from "@sluice/adaptive"
 *
 * const layer = ConcurrencyLimiter.layer({ algorithm: CongestionWindow.factory({ variant: "reno" }) })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const factory: (options?: CongestionWindowOptions) => Factory = internal.factory

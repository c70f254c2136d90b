/**
 * Additive-increase / multiplicative-decrease concurrency limit (docs/ARCHITECTURE.md §5).
 *
 * On a drop the limit becomes `floor(limit × backoffRatio)` (0.9 by default);
 * on a success it grows by 1, but only while the limit is actually used
 * (in-flight ≥ limit / 2). The limit stays within `[minLimit, maxLimit]`.
 * Optionally a success slower than `timeout` counts as a drop.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type { Options } from "@sluice/core"
import * as internal from "../internal/limit/aimdLimit.js"
import type { Bounds, BoundsOptions, Factory, LimitAlgorithm } from "./LimitAlgorithm.js"
import type * as Duration from "effect/Duration"

/**
 * Options: the shared bounds ({@link BoundsOptions}: `initial` 20, `minLimit` 1,
 * `maxLimit` 1000), `backoffRatio` in (0, 1) (0.9) applied on a drop, and an optional
 * `timeout` above which a success counts as a drop.
 *
 * @since 0.1.0
 * @category schemas
 * @category models
 */
export interface AimdLimitOptions extends BoundsOptions {
  readonly backoffRatio?: number | undefined
  readonly timeout?: Duration.Input | undefined
}

/**
 * Options after defaults (what the algorithm runs with).
 *
 * @since 0.1.0
 * @category models
 */
export interface AimdLimitConfig extends Bounds {
  readonly backoffRatio: number
  readonly timeout?: Duration.Duration | undefined
}

/**
 * An AIMD limit.
 *
 * @since 0.1.0
 * @category models
 */
export interface AimdLimit extends LimitAlgorithm {
  readonly options: AimdLimitConfig
}

/**
 * Makes an AIMD limit, failing with `InvalidOptions` on bad options.
 *
 * @example
 * ```ts
 * import { AimdLimit } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const aimd = yield* AimdLimit.make({ initial: 30 })
 *   aimd.onSample({ id: 0, nextId: 1, outcome: "dropped", rtt: 1, inFlight: 30, now: 0 })
 *   console.log(aimd.limit) // prints: 27
 * })
 * Effect.runPromise(program)
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options?: AimdLimitOptions) => Effect.Effect<AimdLimit, Options.InvalidOptions> =
  internal.make

/**
 * Makes an AIMD limit synchronously; throws `InvalidOptions`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe: (options?: AimdLimitOptions) => AimdLimit = internal.makeUnsafe

/**
 * Validates the options now (throws `InvalidOptions`) and returns a factory
 * that makes one fresh limit per limiter key.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer for an app to provide
 * import { AimdLimit, ConcurrencyLimiter } from "@sluice/adaptive"
 *
 * const layer = ConcurrencyLimiter.layer({ algorithm: AimdLimit.factory({ backoffRatio: 0.8 }) })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const factory: (options?: AimdLimitOptions) => Factory = internal.factory

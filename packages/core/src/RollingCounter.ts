/**
 * A bucketed rolling counter: how many events happened over the last `window`,
 * in `buckets` slices. Memory is bounded by the bucket count; recording is O(1)
 * and reading is amortised O(1). Time comes only from Effect's `Clock`, so
 * `TestClock` and the simulation drive it.
 *
 * An event recorded at time `t` is counted at time `now` while
 * `floor(t / width) > floor(now / width) - buckets`, where `width = window / buckets`.
 *
 * The `unsafe*` functions take the clock reading explicitly, for hot paths that
 * already read the `Clock` once per call. The counting rule is
 * `@sluice/kernel/stats/RollingCounter`; this module binds it to the `Clock`.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type { Pipeable } from "effect/Pipeable"
import * as internal from "./internal/rollingCounter.js"
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
 * A rolling counter. Mutable; owned by the service that made it.
 *
 * @since 0.1.0
 * @category models
 */
export interface RollingCounter extends Pipeable {
  readonly [TypeId]: TypeId
  readonly window: Duration.Duration
  readonly buckets: number
  /** Adds `amount` (default 1) at the given clock reading (epoch millis). */
  readonly unsafeAdd: (nowMillis: number, amount?: number) => void
  /** The total over the window ending at the given clock reading. */
  readonly unsafeTotal: (nowMillis: number) => number
  /** Forgets everything. */
  readonly unsafeReset: () => void
}

/**
 * Options: the window (a positive duration) and how many buckets slice it
 * (a positive integer, default 10).
 *
 * @since 0.1.0
 * @category models
 */
export interface RollingCounterOptions {
  readonly window: Duration.Input
  /** Default 10. */
  readonly buckets?: number | undefined
}

/**
 * Makes a counter, failing with `InvalidOptions` on a bad window or bucket count.
 *
 * @example
 * ```ts
 * import { RollingCounter } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const counter = yield* RollingCounter.make({ window: "10 seconds", buckets: 10 })
 *   yield* RollingCounter.add(counter)
 *   console.log(yield* RollingCounter.total(counter)) // prints: 1
 * })
 * Effect.runPromise(program)
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options: RollingCounterOptions) => Effect.Effect<RollingCounter, InvalidOptions> =
  internal.make

/**
 * Makes a counter synchronously; throws `InvalidOptions`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unsafeMake: (options: RollingCounterOptions) => RollingCounter = internal.unsafeMake

/**
 * Records `amount` events (default 1) now.
 *
 * @since 0.1.0
 * @category utils
 */
export const add: {
  (amount?: number): (self: RollingCounter) => Effect.Effect<void>
  (self: RollingCounter, amount?: number): Effect.Effect<void>
} = internal.add

/**
 * The number of events in the window ending now.
 *
 * @since 0.1.0
 * @category getters
 */
export const total: (self: RollingCounter) => Effect.Effect<number> = internal.total

/**
 * Exact comparisons of a share of counts (`part / whole`) against a configured
 * ratio. `failures >= ratio * calls` in floating point misses exact shares
 * (`0.55 * 100` is `55.00000000000001`, so 55 failures of 100 do not reach
 * 0.55); this module reads the ratio as the decimal it is written as (its
 * shortest round-trip form: `0.55` is 55/100) and compares by integer
 * cross-multiplication, with `BigInt` only where a product would pass 2^53.
 *
 * @since 0.2.0
 */
import * as Ratio from "@sluice/kernel/stats/Ratio"

/**
 * A ratio compiled for exact comparisons. `part` and `whole` must be
 * non-negative integers (counts).
 *
 * @since 0.2.0
 * @category models
 */
export interface ExactRatio extends Ratio.ExactRatio {}

/**
 * Compiles a ratio (finite, non-negative; throws a `RangeError` otherwise —
 * validate options with `Options.Ratio` first).
 *
 * @example
 * ```ts
 * import { Ratio } from "@sluice/core"
 *
 * const half = Ratio.make(0.55)
 * console.log(half.atLeast(55, 100)) // prints: true
 * // (55 >= 0.55 * 100 is false in floating point)
 * console.log(half.above(55, 100)) // prints: false
 * console.log(Ratio.make(0.07).floorTimes(100)) // prints: 7
 * // (Math.floor(0.07 * 100) is 7 too, but 0.29 * 100 is 28.999999999999996)
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const make: (ratio: number) => ExactRatio = Ratio.make

/**
 * Whether ratios written as decimals add up to at most `bound`, exactly
 * (`0.33 + 0.56 + 0.11` is `1.0000000000000002` in floating point, and at most 1
 * here). Throws a `RangeError` for a negative or non-finite value.
 *
 * @example
 * ```ts
 * import { Ratio } from "@sluice/core"
 *
 * console.log(Ratio.sumAtMost([0.33, 0.56, 0.11], 1)) // prints: true
 * console.log(Ratio.sumAtMost([0.5, 0.50001], 1)) // prints: false
 * ```
 * @since 0.2.0
 * @category utils
 */
export const sumAtMost: (ratios: ReadonlyArray<number>, bound: number) => boolean = Ratio.sumAtMost

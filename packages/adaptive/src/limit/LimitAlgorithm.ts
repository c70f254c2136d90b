/**
 * The small interface every concurrency limit algorithm implements.
 *
 * A limit algorithm is a state machine: it holds the current limit (how many
 * requests may be in flight at once) and changes it when the
 * `ConcurrencyLimiter` reports the outcome of a request through `onSample`.
 * It is synchronous and owns no fibers, so it runs unchanged under `TestClock`
 * and in the simulation. Write your own by implementing {@link LimitAlgorithm}.
 *
 * @since 0.1.0
 */
import type * as Limit from "@sluice/kernel/limit/Limit"
import * as internal from "../internal/limit/limitAlgorithm.js"

/**
 * How a request ended, from the limiter's point of view:
 * - `success`: it completed; its round-trip time is a latency measurement;
 * - `dropped`: the backend was overloaded (`Overloaded`, a timeout, or what the
 *   limiter's `isDrop` predicate says): the limit should come down;
 * - `ignored`: any other error, or interruption: says nothing about capacity.
 *
 * @since 0.1.0
 * @category models
 */
export type Outcome = Limit.Outcome

/**
 * One measurement, reported once per request that held a permit.
 *
 * Permit ids increase by one per permit granted (starting at 0), so "every
 * request in flight right now" is exactly "every request whose id is below
 * `nextId` and which has not reported yet": an algorithm can remember a set of
 * in-flight requests as a single number.
 *
 * @since 0.1.0
 * @category models
 */
export interface Sample extends Limit.Sample {}

/**
 * A request leaving: its permit `id`, the requests in flight with it (`inFlight`,
 * this one included) and the Clock reading `now`. Given to
 * {@link LimitAlgorithm.onDeparture} when the limiter grants the permit; with a pacer
 * *outside* the limiter (`pacer.withPacer(limiter.withLimiter(call))`) that is the moment the
 * request is sent.
 *
 * @since 0.2.0
 * @category models
 */
export interface Departure extends Limit.Departure {}

/**
 * A limit algorithm. `limit` may be fractional; the limiter grants a permit
 * only while `inFlight < limit`. `onSample` updates the state and returns the
 * new limit. The limiter owns one instance per key and calls it synchronously;
 * the sample object must not be retained. The members are the kernel's `Limit`
 * (`@sluice/kernel/limit/Limit`), whose optional hooks (`onDeparture`,
 * `pacingInterval`, `takeBurst`, `nextTimer` / `onTimer`) drive a pacer made by
 * `Pacer.forLimiter`.
 *
 * @example
 * ```ts
 * import type { LimitAlgorithm } from "@sluice/adaptive"
 *
 * // halves on a drop, +1 on a success, never below 1
 * const halving = (): LimitAlgorithm.LimitAlgorithm => {
 *   let limit = 10
 *   return {
 *     name: "halving",
 *     get limit() {
 *       return limit
 *     },
 *     onSample: (sample) =>
 *       (limit = sample.outcome === "dropped" ? Math.max(1, limit / 2) : sample.outcome === "success" ? limit + 1 : limit)
 *   }
 * }
 * const limit = halving()
 * limit.onSample({ id: 0, nextId: 1, outcome: "dropped", rtt: 1, inFlight: 10, now: 0 })
 * console.log(limit.limit) // prints: 5
 * ```
 * @since 0.1.0
 * @category models
 */
export interface LimitAlgorithm extends Limit.Limit {}

/**
 * Makes a fresh algorithm for a limiter key (one instance per key, e.g. per host).
 *
 * @since 0.1.0
 * @category models
 */
export type Factory = (key: string) => LimitAlgorithm

/**
 * The bounds every limit algorithm shares (`AimdLimit`, `CongestionWindow`, `VegasLimit`), all
 * integers: `initial` (default 20, clamped into `[minLimit, maxLimit]` when not given;
 * an explicit `initial` outside them is an `InvalidOptions`), `minLimit` (default 1),
 * `maxLimit` (default 1000, `Infinity` allowed: a finite default, so a limit that never
 * hears a drop cannot grow without bound).
 *
 * @since 0.2.0
 * @category models
 */
export interface BoundsOptions {
  readonly initial?: number | undefined
  readonly minLimit?: number | undefined
  readonly maxLimit?: number | undefined
}

/**
 * {@link BoundsOptions} after defaults.
 *
 * @since 0.2.0
 * @category models
 */
export interface Bounds extends Limit.Bounds {}

/**
 * A fixed limit that never changes: a plain semaphore with the limiter's queue,
 * partitions and metrics. Throws `InvalidOptions` unless `limit` is a positive integer.
 *
 * @example
 * ```ts
 * import { LimitAlgorithm } from "@sluice/adaptive"
 *
 * const ten = LimitAlgorithm.fixed(10)
 * console.log(ten.limit) // prints: 10
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const fixed: (limit: number) => LimitAlgorithm = internal.fixed

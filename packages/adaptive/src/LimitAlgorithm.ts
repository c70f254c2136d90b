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
import * as internal from "./internal/limitAlgorithm.js"

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
export type Outcome = "success" | "dropped" | "ignored"

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
export interface Sample {
  /** The id of the permit this request held. */
  readonly id: number
  /** The id the next permit will get: every id below it has been granted. */
  readonly nextId: number
  readonly outcome: Outcome
  /** Milliseconds between the permit being granted and the request ending (queue wait excluded). */
  readonly rtt: number
  /** Requests in flight when the sample is reported, this one included. */
  readonly inFlight: number
  /** The clock reading (epoch millis) when the sample is reported. */
  readonly now: number
  /**
   * When the request left (Clock millis): the grant of its permit. Present when the
   * algorithm implements {@link LimitAlgorithm.onDeparture}.
   *
   * @since 0.2.0
   */
  readonly departedAt?: number | undefined
  /**
   * What {@link LimitAlgorithm.onDeparture} returned for this request (for example a
   * probe number), handed back with its outcome.
   *
   * @since 0.2.0
   */
  readonly mark?: number | undefined
}

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
export interface Departure {
  readonly id: number
  readonly inFlight: number
  readonly now: number
}

/**
 * A limit algorithm. `limit` may be fractional; the limiter grants a permit
 * only while `inFlight < limit`. `onSample` updates the state and returns the
 * new limit. The limiter owns one instance per key and calls it synchronously;
 * the sample object must not be retained.
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
 * ```
 * @since 0.1.0
 * @category models
 */
export interface LimitAlgorithm {
  readonly name: string
  readonly limit: number
  onSample(sample: Sample): number
  /**
   * `false` declares that `onSample` reads neither `rtt` nor `now` (the congestion
   * window, a fixed limit): the limiter then skips the clock read when a request
   * settles, and such samples carry `rtt` 0 and the admission time as `now`.
   * Absent or `true`, every sample is timed.
   */
  readonly usesTime?: boolean | undefined
  /**
   * Optional: called when a request departs (its permit is granted), with the number
   * in flight with it. The returned number comes back as {@link Sample.mark} with the
   * request's outcome (BBR's per-packet delivery state, Netflix concurrency-limits'
   * `inflight` at start). `CongestionWindow`, `Aimd` and `Vegas` do not implement it.
   *
   * @since 0.2.0
   */
  onDeparture?(departure: Departure): number | undefined
  /**
   * Optional: the spacing (millis) the algorithm wants between departures. A pacer
   * made by `Pacer.forLimiter` follows it instead of its own `srtt / (gain × limit)`
   * rule; `undefined` means "do not pace now". BBR's pacing rate, as an interval.
   *
   * @since 0.2.0
   */
  readonly pacingInterval?: number | undefined
  /**
   * Optional: asked by the pacer before it releases departures. A positive `k`
   * releases the next `k` waiting departures at once and pushes the rest of the
   * schedule back by `k` intervals (a burst probe at the same average rate); a
   * negative `-m` pauses the schedule by `m` intervals. Each call consumes the request.
   *
   * @since 0.2.0
   */
  takeBurst?(now: number): number
  /**
   * Optional: the Clock millis at which the algorithm wants {@link onTimer} called
   * (`undefined`: no timer). Lets an algorithm act on the absence of an outcome, e.g.
   * "no rejection came back within a deadline". The pacer of `Pacer.forLimiter`
   * runs it (from its timer fiber, while it has departures waiting, and on every
   * departure).
   *
   * @since 0.2.0
   */
  readonly nextTimer?: number | undefined
  /**
   * Optional: called at (or after) {@link nextTimer}.
   *
   * @since 0.2.0
   */
  onTimer?(now: number): void
}

/**
 * Makes a fresh algorithm for a limiter key (one instance per key, e.g. per host).
 *
 * @since 0.1.0
 * @category models
 */
export type Factory = (key: string) => LimitAlgorithm

/**
 * The bounds every limit algorithm shares (`Aimd`, `CongestionWindow`, `Vegas`), all
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
export interface Bounds {
  readonly initial: number
  readonly minLimit: number
  readonly maxLimit: number
}

/**
 * A fixed limit that never changes: a plain semaphore with the limiter's queue,
 * partitions and metrics. Throws `InvalidOptions` unless `limit` is a positive integer.
 *
 * @example
 * ```ts
 * import { LimitAlgorithm } from "@sluice/adaptive"
 *
 * const ten = LimitAlgorithm.fixed(10)
 * ten.limit // 10
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const fixed: (limit: number) => LimitAlgorithm = internal.fixed

/**
 * The retry budget of the SRE book's "Handling Overload" (and Finagle's `RetryBudget`):
 * per client, retries may be at most `ratio` of requests over a sliding window, plus a
 * small floor of retries per second so that a quiet client can still retry. Whatever
 * the cause of a failure, retries can then add at most `ratio` to the load a backend
 * sees: a backend that is down is not hit by every client retrying every request.
 *
 * Both counts are rolling counters over the same window. A retry is granted while
 * `retries + 1 ≤ ⌊ratio × requests + reserve⌋` (the reserve being
 * `minRetriesPerSecond × window`), exactly: `0.1 × 30` is 3 here, not
 * 3.0000000000000004 (see `Ratio`).
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"
import * as Ratio from "../stats/Ratio.js"
import { RollingCounter } from "../stats/RollingCounter.js"

/**
 * The options of a budget service, their ranges and defaults: retries at most 10% of requests
 * (`ratio`) over a 10-second `window` in 10 `buckets`, with a floor of one retry per second, for
 * at most 10,000 clients (`maxKeys`) at once.
 *
 * @since 0.2.0
 */
export const options = {
  ratio: Field.withDefault(Field.ratio, 0.1),
  window: Field.duration(Field.withDefault(Field.positiveDuration, 10_000)),
  buckets: Field.withDefault(Field.positiveInt, 10),
  minRetriesPerSecond: Field.withDefault(Field.nonNegative, 1),
  maxKeys: Field.withDefault(Field.positiveInt, 10_000)
}

/**
 * A budget's settings, validated by the caller: `ratio` finite and non-negative,
 * `windowMillis` positive and finite, `buckets` a positive integer, `minRetriesPerSecond`
 * finite and non-negative.
 *
 * @since 0.2.0
 */
export interface BudgetOptions {
  readonly ratio: number
  readonly windowMillis: number
  readonly buckets: number
  readonly minRetriesPerSecond: number
}

/**
 * What a budget holds at a moment: requests and retries in the window, the retries the
 * window allows (`ratio × requests + reserve`, as a real number) and how many whole
 * retries are still available.
 *
 * @since 0.2.0
 */
export interface BudgetStats {
  readonly requests: number
  readonly retries: number
  readonly allowed: number
  readonly available: number
}

/**
 * The floor of retries a window grants whatever the traffic: `minRetriesPerSecond`
 * over the window.
 *
 * @since 0.2.0
 */
export const reserveOf = (minRetriesPerSecond: number, windowMillis: number): number =>
  minRetriesPerSecond * (windowMillis / 1000)

/**
 * One client's retry budget. Mutable: the owner passes the time (`now`, epoch
 * milliseconds) to every call.
 *
 * @since 0.2.0
 */
export class Budget {
  private readonly requests: RollingCounter
  private readonly retries: RollingCounter
  private readonly exactRatio: Ratio.ExactRatio
  private readonly ratio: number
  /** The floor of retries per window. */
  readonly reserve: number

  /**
   * Throws a `RangeError` naming the field for a negative or non-finite ratio, or a bad window or
   * bucket count (those of a rolling counter). A ratio above 1 is accepted here: the exact ratio
   * needs only a finite, non-negative one.
   */
  constructor(options: BudgetOptions) {
    Field.orThrow(Field.fields([["ratio", options.ratio, Field.nonNegative]]))
    this.ratio = options.ratio
    this.reserve = reserveOf(options.minRetriesPerSecond, options.windowMillis)
    this.exactRatio = Ratio.make(options.ratio)
    this.requests = new RollingCounter({ windowMillis: options.windowMillis, buckets: options.buckets })
    this.retries = new RollingCounter({ windowMillis: options.windowMillis, buckets: options.buckets })
  }

  /**
   * Whole retries the window allows, `⌊ratio × requests + reserve⌋`: exact for a whole
   * reserve.
   */
  private allowance(requests: number): number {
    return Number.isSafeInteger(this.reserve) && Number.isSafeInteger(requests)
      ? this.exactRatio.floorTimes(requests) + this.reserve
      : Math.floor(this.ratio * requests + this.reserve)
  }

  /** Counts one request (a first try) at `now`. */
  recordRequest(now: number): void {
    this.requests.add(now, 1)
  }

  /** Takes one retry from the budget at `now`, if the window allows it. */
  tryWithdraw(now: number): boolean {
    if (this.retries.total(now) + 1 > this.allowance(this.requests.total(now))) return false
    this.retries.add(now, 1)
    return true
  }

  /**
   * Gives back, at `now`, the retry withdrawn at `withdrawnAt`: one that never reached the
   * backend (this process refused it, or it was abandoned before it was sent) added no load,
   * and the budget bounds load. Nothing once the withdrawal has left the window.
   */
  refund(withdrawnAt: number, now: number): void {
    this.retries.removeAt(withdrawnAt, now, 1)
  }

  /** The counts of the window ending at `now`. */
  stats(now: number): BudgetStats {
    const requests = this.requests.total(now)
    const retries = this.retries.total(now)
    const allowed = this.ratio * requests + this.reserve
    return { requests, retries, allowed, available: Math.max(0, this.allowance(requests) - retries) }
  }
}

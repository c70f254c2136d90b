/**
 * A bucketed rolling counter: how many events happened over the last `windowMillis`, in
 * `buckets` slices. It is the window behind the SRE book's client-side throttle (requests and
 * accepts over two minutes), the retry budget and histogram, and the breaker's failure ratio.
 * Memory is bounded by the bucket count; recording is O(1) and reading amortised O(1), so a
 * counter per key stays cheap on a hot path.
 *
 * An event added at time `t` is counted at time `now` while
 * `floor(t / width) > floor(now / width) − buckets`, where `width = windowMillis / buckets`:
 * the window slides one whole bucket at a time, which is what bounds the memory.
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"

/**
 * The options of a rolling counter as its users write them: a positive, finite `window` and how
 * many `buckets` slice it (a positive integer, default 10).
 *
 * @since 0.2.0
 */
export const options = {
  window: Field.duration(Field.required<number>(Field.positiveDuration)),
  buckets: Field.withDefault(Field.positiveInt, 10)
}

// The options in milliseconds, as the constructor takes them.
const spec = { windowMillis: options.window, buckets: options.buckets }

/**
 * @since 0.2.0
 */
export interface RollingCounterOptions {
  /** The window, in milliseconds: positive and finite. */
  readonly windowMillis: number
  /** How many buckets slice the window: a positive integer, default 10. */
  readonly buckets?: number | undefined
}

/**
 * A rolling counter. Mutable: the owner passes the time (`now`, epoch milliseconds) to every
 * call; a time earlier than one already seen counts in the latest bucket.
 *
 * @since 0.2.0
 */
export class RollingCounter {
  /** The window, in milliseconds. */
  readonly windowMillis: number
  /** How many buckets slice the window. */
  readonly buckets: number
  private readonly counts: Float64Array
  private readonly width: number
  private last = Number.NEGATIVE_INFINITY
  /** The slot of bucket `last`. */
  private slot = 0
  private sum = 0
  /** The time of the latest `advance`: advancing to it again changes nothing. */
  private advancedTo = Number.NaN

  /** Throws a `RangeError` naming the field for a bad window or bucket count ({@link options}). */
  constructor(input: RollingCounterOptions) {
    const { buckets, windowMillis } = Field.resolveOrThrow(spec, input)
    this.windowMillis = windowMillis
    this.buckets = buckets
    this.counts = new Float64Array(buckets)
    this.width = windowMillis / buckets
  }

  private advance(now: number): void {
    // A reading and an update at the same time (a call's judge, then its settlement) slide once.
    if (now === this.advancedTo) return
    this.advancedTo = now
    const index = Math.floor(now / this.width)
    if (index <= this.last) return
    const steps =
      this.last === Number.NEGATIVE_INFINITY ? this.buckets : Math.min(index - this.last, this.buckets)
    for (let k = 1; k <= steps; k++) {
      const slot = (((index - steps + k) % this.buckets) + this.buckets) % this.buckets
      this.sum -= this.counts[slot]!
      this.counts[slot] = 0
    }
    this.last = index
    this.slot = ((index % this.buckets) + this.buckets) % this.buckets
    // Float drift from repeated subtraction must never leave a tiny negative total.
    if (this.sum < 1e-9) this.sum = Math.max(0, this.sum)
  }

  /** Adds `amount` (default 1) at `now`. */
  add(now: number, amount = 1): void {
    this.advance(now)
    this.counts[this.slot]! += amount
    this.sum += amount
  }

  /**
   * Takes back up to `amount` (default 1) of what was added at time `at`, as seen at `now`: from
   * `at`'s own bucket, so the total falls now and stays right when that bucket leaves the window
   * (taking it from the latest bucket would outlive the event it cancels). Nothing once `at`'s
   * bucket has left the window; never below zero.
   */
  removeAt(at: number, now: number, amount = 1): void {
    this.advance(now)
    const index = Math.floor(at / this.width)
    if (index > this.last || index <= this.last - this.buckets) return
    const slot = ((index % this.buckets) + this.buckets) % this.buckets
    const taken = Math.min(amount, this.counts[slot]!)
    if (!(taken > 0)) return
    this.counts[slot]! -= taken
    this.sum -= taken
    if (this.sum < 1e-9) this.sum = Math.max(0, this.sum)
  }

  /**
   * Whether what was added at time `at` is still counted at `now`: its bucket has not left
   * the window (and is not in the future).
   */
  holds(at: number, now: number): boolean {
    this.advance(now)
    const index = Math.floor(at / this.width)
    return index <= this.last && index > this.last - this.buckets
  }

  /**
   * Adds `amount` (default 1) into the bucket of time `at`, as seen at `now`, so that it leaves
   * the window with what was added at `at`; nothing once that bucket has left the window.
   * Returns whether it was added.
   */
  addAt(at: number, now: number, amount = 1): boolean {
    if (!this.holds(at, now)) return false
    const index = Math.floor(at / this.width)
    const slot = ((index % this.buckets) + this.buckets) % this.buckets
    this.counts[slot]! += amount
    this.sum += amount
    return true
  }

  /** The total over the window ending at `now`. */
  total(now: number): number {
    this.advance(now)
    return this.sum
  }

  /** Forgets everything. */
  reset(): void {
    this.counts.fill(0)
    this.sum = 0
    this.last = Number.NEGATIVE_INFINITY
    this.slot = 0
    this.advancedTo = Number.NaN
  }
}

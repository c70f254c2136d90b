/**
 * The server side of "retries at one layer" (the SRE book's "Handling Overload"): every
 * request carries its attempt number, the server keeps a windowed histogram of them, and
 * when the share of retries among the requests it sees passes a threshold, the whole
 * backend is overloaded and more retries only add to it, so it answers "don't retry".
 *
 * Attempts count in buckets `0 … maxAttempt`, the last one being "maxAttempt or more".
 * Requests of callers that are not trusted are counted apart and never take part in the
 * decision: anonymous callers claiming to be retries must not make the server refuse
 * others' retries, nor, claiming first tries, dilute the share. The decision needs at
 * least `minRequests` in the window, and compares the share exactly (see `Ratio`).
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"
import * as Ratio from "../stats/Ratio.js"
import { RollingCounter } from "../stats/RollingCounter.js"

/**
 * At most this many attempt buckets: a histogram holds one rolling counter per bucket, twice.
 *
 * @since 0.2.0
 */
export const MAX_ATTEMPT_BUCKETS = 100

/**
 * The options of a histogram, their ranges and defaults: a 10-second `window` in 10 `buckets`,
 * attempts counted up to 3 (`maxAttempt`, the last bucket being "3 or more"), "don't retry"
 * above a 10% share of retries (`threshold`) once 20 requests (`minRequests`) are in the window.
 *
 * @since 0.2.0
 */
export const options = {
  window: Field.duration(Field.withDefault(Field.positiveDuration, 10_000)),
  buckets: Field.withDefault(Field.positiveInt, 10),
  maxAttempt: Field.withDefault(
    Field.all(Field.positiveInt, (n) =>
      (n as number) <= MAX_ATTEMPT_BUCKETS
        ? undefined
        : `expected at most ${MAX_ATTEMPT_BUCKETS} attempt buckets`
    ),
    3
  ),
  threshold: Field.withDefault(Field.ratio, 0.1),
  minRequests: Field.withDefault(Field.nonNegativeInt, 20)
}

/**
 * The label of an attempt bucket: its number, and `n+` for the last one (`maxAttempt` or more).
 *
 * @since 0.2.0
 */
export const bucketLabel = (bucket: number, maxAttempt: number): string =>
  bucket === maxAttempt ? `${bucket}+` : String(bucket)

/**
 * A histogram's settings, validated by the caller: `windowMillis` positive and finite,
 * `buckets` and `maxAttempt` positive integers, `threshold` finite and non-negative,
 * `minRequests` a non-negative integer.
 *
 * @since 0.2.0
 */
export interface HistogramOptions {
  readonly windowMillis: number
  readonly buckets: number
  readonly maxAttempt: number
  readonly threshold: number
  readonly minRequests: number
}

/**
 * The counts of the untrusted requests in the window.
 *
 * @since 0.2.0
 */
export interface UntrustedCounts {
  readonly total: number
  readonly retries: number
  readonly byAttempt: ReadonlyArray<number>
}

/**
 * The trusted requests in the window: total, retries (attempt ≥ 1), their share, and the
 * count per attempt bucket; and the untrusted ones apart.
 *
 * @since 0.2.0
 */
export interface Snapshot {
  readonly total: number
  readonly retries: number
  readonly shareOfRetries: number
  readonly byAttempt: ReadonlyArray<number>
  readonly untrusted: UntrustedCounts
}

/**
 * A decision: whether to answer "don't retry", and the share of retries it was made on.
 *
 * @since 0.2.0
 */
export interface Decision {
  readonly reject: boolean
  readonly shareOfRetries: number
}

const MAX_HEADER_LENGTH = 8

/**
 * An attempt number as a histogram reads it: a positive integer, or the digits of one
 * (at most 8 characters, surrounding whitespace allowed); anything else is 0, a first try.
 *
 * @since 0.2.0
 */
export const parseAttempt = (value: string | number | null | undefined): number => {
  if (typeof value === "number") return Number.isInteger(value) && value > 0 ? value : 0
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_HEADER_LENGTH) return 0
  const trimmed = value.trim()
  if (!/^\d+$/.test(trimmed)) return 0
  return Number.parseInt(trimmed, 10)
}

/**
 * A windowed histogram of attempt numbers. Mutable: the owner passes the time (`now`,
 * epoch milliseconds) to every call.
 *
 * @since 0.2.0
 */
export class Histogram {
  readonly maxAttempt: number
  private readonly counters: ReadonlyArray<RollingCounter>
  private readonly untrustedCounters: ReadonlyArray<RollingCounter>
  private readonly threshold: Ratio.ExactRatio
  private readonly minRequests: number

  /**
   * Throws a `RangeError` naming the field for a bad window or bucket count (those of a rolling
   * counter), or a negative or non-finite threshold (one above 1 is accepted here: the exact
   * ratio needs only a finite, non-negative one).
   */
  constructor(options: HistogramOptions) {
    Field.orThrow(Field.fields([["threshold", options.threshold, Field.nonNegative]]))
    const { buckets, maxAttempt, windowMillis } = options
    this.maxAttempt = maxAttempt
    this.minRequests = options.minRequests
    this.threshold = Ratio.make(options.threshold)
    this.counters = Array.from(
      { length: maxAttempt + 1 },
      () => new RollingCounter({ windowMillis, buckets })
    )
    this.untrustedCounters = Array.from(
      { length: maxAttempt + 1 },
      () => new RollingCounter({ windowMillis, buckets })
    )
  }

  /** The bucket an attempt counts in: `0 … maxAttempt` (malformed attempts are first tries). */
  bucketOf(attempt: number): number {
    return Math.min(this.maxAttempt, parseAttempt(attempt))
  }

  /** Records a trusted request at `now`; returns its bucket. */
  record(now: number, attempt: number): number {
    const index = this.bucketOf(attempt)
    this.counters[index]!.add(now, 1)
    return index
  }

  /** Records a request of a caller that is not trusted at `now`; returns its bucket. */
  recordUntrusted(now: number, attempt: number): number {
    const index = this.bucketOf(attempt)
    this.untrustedCounters[index]!.add(now, 1)
    return index
  }

  /** The counts of the window ending at `now`. */
  snapshot(now: number): Snapshot {
    const byAttempt = this.counters.map((counter) => counter.total(now))
    const total = byAttempt.reduce((a, b) => a + b, 0)
    const retries = total - byAttempt[0]!
    const shareOfRetries = total === 0 ? 0 : retries / total
    const untrustedByAttempt = this.untrustedCounters.map((counter) => counter.total(now))
    const untrustedTotal = untrustedByAttempt.reduce((a, b) => a + b, 0)
    return {
      total,
      retries,
      shareOfRetries,
      byAttempt,
      untrusted: {
        total: untrustedTotal,
        retries: untrustedTotal - untrustedByAttempt[0]!,
        byAttempt: untrustedByAttempt
      }
    }
  }

  /**
   * Whether to answer "don't retry" at `now`: at least `minRequests` trusted requests in
   * the window and a share of retries above the threshold, exactly.
   */
  decide(now: number): Decision {
    // The trusted counts only, without building a snapshot: a server asks on every 5xx.
    const counters = this.counters
    const first = counters[0]!.total(now)
    let total = first
    for (let i = 1; i < counters.length; i++) total += counters[i]!.total(now)
    const retries = total - first
    const shareOfRetries = total === 0 ? 0 : retries / total
    return { reject: total >= this.minRequests && this.threshold.above(retries, total), shareOfRetries }
  }
}

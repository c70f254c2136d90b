/**
 * A latency window: median, p99 and any other quantile of the latencies recorded over a
 * sliding time window, in bounded memory. The threshold monitor compares its median with a
 * threshold to decide when responses carry the throttle signal.
 *
 * Each sub-window holds a log-bucketed histogram in the style of DDSketch (Masson, Rim and Lee,
 * "DDSketch: a fast and fully-mergeable quantile sketch with relative-error guarantees", VLDB
 * 2019): with relative accuracy `α` (default 0.01), bucket `i` holds the values in
 * `(γ^(i-1), γ^i]` where `γ = (1 + α) / (1 − α)`, and answers with `2γ^i / (γ + 1)`.
 * **Guarantee:** for every `q`, the answer is within a relative error `α` of the exact quantile,
 * the recorded value of 0-based rank `⌊q · (count − 1)⌋` in the window, for values in
 * `[1e-4, 1e8]` milliseconds. Values below `1e-4` ms are answered as `0`; values above `1e8` ms
 * (about 28 hours) are clamped to it; negative, `NaN` and infinite values are ignored.
 *
 * The window is rotated like `RollingCounter`: `windowMillis` is sliced into `subWindows`
 * (default 6) sub-windows of width `w = windowMillis / subWindows`, and a value recorded at `t`
 * counts at `now` while `floor(t / w) > floor(now / w) − subWindows`. Memory: each sub-window
 * stores only the range of buckets it has seen, about `ln(max / min) / ln(γ)` numbers (≈ 350 for
 * latencies spanning 1 ms to 1 s at 1%). Recording is O(1) amortised; a quantile scans the
 * buckets in use.
 *
 * Why the bound holds: a value `v` in `(γ^(i-1), γ^i]` is answered with `r = 2γ^i / (γ + 1)`;
 * the relative error `|r − v| / v` is largest at the two ends of the bucket, where it equals
 * `(γ − 1) / (γ + 1) = α`. The bucket holding the value of rank `⌊q · (count − 1)⌋` is the first
 * whose cumulative count exceeds `q · (count − 1)`, which is the one a query answers from.
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"

/**
 * The smallest latency (milliseconds) told apart from zero.
 *
 * @since 0.2.0
 */
export const MIN_TRACKABLE = 1e-4

/**
 * The largest latency (milliseconds) kept as is; larger ones are clamped to it.
 *
 * @since 0.2.0
 */
export const MAX_TRACKABLE = 1e8

/**
 * Counts per bucket index, stored densely over the range of indices seen so far
 * (grown on demand), so a window whose latencies span two decades holds a few
 * hundred numbers, not the whole trackable range.
 */
class DenseStore {
  counts = new Float64Array(0)
  offset = 0
  // The touched index range [lo, hi]; empty when lo > hi.
  lo = Number.POSITIVE_INFINITY
  hi = Number.NEGATIVE_INFINITY
  total = 0

  private grow(index: number): void {
    const len = this.counts.length
    if (len === 0) {
      this.counts = new Float64Array(64)
      this.offset = index - 32
      return
    }
    const curLo = this.offset
    const curHi = this.offset + len - 1
    const needLo = Math.min(curLo, index)
    const needHi = Math.max(curHi, index)
    const size = Math.max(needHi - needLo + 1 + 32, len * 2)
    // The slack goes on the side that grew.
    const offset = index < curLo ? needHi - size + 1 : needLo
    const next = new Float64Array(size)
    next.set(this.counts, curLo - offset)
    this.offset = offset
    this.counts = next
  }

  add(index: number, amount: number): void {
    if (index < this.offset || index >= this.offset + this.counts.length) this.grow(index)
    this.counts[index - this.offset]! += amount
    this.total += amount
    if (index < this.lo) this.lo = index
    if (index > this.hi) this.hi = index
  }

  subtract(other: DenseStore): void {
    for (let i = other.lo; i <= other.hi; i++) {
      const n = other.counts[i - other.offset]!
      if (n !== 0) {
        this.counts[i - this.offset]! -= n
        this.total -= n
      }
    }
  }

  clear(): void {
    if (this.lo <= this.hi) this.counts.fill(0, this.lo - this.offset, this.hi - this.offset + 1)
    this.lo = Number.POSITIVE_INFINITY
    this.hi = Number.NEGATIVE_INFINITY
    this.total = 0
  }
}

class Slot {
  readonly store = new DenseStore()
  zero = 0
}

/**
 * The options of a latency window as its users write them: a positive, finite `window`, how many
 * `subWindows` slice it (a positive integer, default 6) and the `relativeAccuracy` of every
 * quantile (in (0, 1), default 0.01).
 *
 * @since 0.2.0
 */
export const options = {
  window: Field.duration(Field.required<number>(Field.positiveDuration)),
  subWindows: Field.withDefault(Field.positiveInt, 6),
  relativeAccuracy: Field.withDefault(Field.openRatio, 0.01)
}

// The options in milliseconds, as the constructor takes them.
const spec = {
  windowMillis: options.window,
  subWindows: options.subWindows,
  relativeAccuracy: options.relativeAccuracy
}

/**
 * @since 0.2.0
 */
export interface LatencyWindowOptions {
  /** The window, in milliseconds: positive and finite. */
  readonly windowMillis: number
  /** How many sub-windows slice it: a positive integer, default 6. */
  readonly subWindows?: number | undefined
  /** The relative accuracy of every quantile, in (0, 1); default 0.01. */
  readonly relativeAccuracy?: number | undefined
}

/**
 * A latency window. Mutable: the owner passes the time (`now`, epoch milliseconds) to every call.
 *
 * @since 0.2.0
 */
export class LatencyWindow {
  /** The window, in milliseconds. */
  readonly windowMillis: number
  /** How many sub-windows slice it. */
  readonly subWindows: number
  /** The relative accuracy of every quantile. */
  readonly relativeAccuracy: number
  private readonly width: number
  private readonly lnGamma: number
  private readonly gamma: number
  private readonly slots: Array<Slot>
  private readonly merged = new DenseStore()
  private mergedZero = 0
  private last = Number.NEGATIVE_INFINITY

  /** Throws a `RangeError` naming the field for a bad window, sub-window count or accuracy ({@link options}). */
  constructor(input: LatencyWindowOptions) {
    const { relativeAccuracy, subWindows, windowMillis } = Field.resolveOrThrow(spec, input)
    this.windowMillis = windowMillis
    this.subWindows = subWindows
    this.relativeAccuracy = relativeAccuracy
    this.width = windowMillis / subWindows
    this.gamma = (1 + relativeAccuracy) / (1 - relativeAccuracy)
    this.lnGamma = Math.log(this.gamma)
    this.slots = Array.from({ length: subWindows }, () => new Slot())
  }

  private expire(slot: Slot): void {
    if (slot.zero === 0 && slot.store.total === 0) return
    this.merged.subtract(slot.store)
    this.mergedZero -= slot.zero
    slot.store.clear()
    slot.zero = 0
  }

  private advance(now: number): number {
    const index = Math.floor(now / this.width)
    if (index <= this.last) return this.last
    const n = this.subWindows
    const steps = this.last === Number.NEGATIVE_INFINITY ? n : Math.min(index - this.last, n)
    for (let k = 1; k <= steps; k++) {
      this.expire(this.slots[(((index - steps + k) % n) + n) % n]!)
    }
    this.last = index
    return index
  }

  /** Records a latency of `millis` milliseconds at `now`. */
  record(now: number, millis: number): void {
    if (!(millis >= 0) || millis === Infinity) return
    const index = this.advance(now)
    const n = this.subWindows
    const slot = this.slots[((index % n) + n) % n]!
    if (millis < MIN_TRACKABLE) {
      slot.zero++
      this.mergedZero++
      return
    }
    const bucket = Math.ceil(Math.log(Math.min(millis, MAX_TRACKABLE)) / this.lnGamma)
    slot.store.add(bucket, 1)
    this.merged.add(bucket, 1)
  }

  /** How many latencies the window ending at `now` holds. */
  count(now: number): number {
    this.advance(now)
    return this.mergedZero + this.merged.total
  }

  /**
   * The `q`-quantile (`q` clamped to `[0, 1]`) over the window ending at `now`; `undefined`
   * when the window is empty or `q` is `NaN`.
   */
  quantile(now: number, q: number): number | undefined {
    if (Number.isNaN(q)) return undefined
    this.advance(now)
    const count = this.mergedZero + this.merged.total
    if (count === 0) return undefined
    // 0-based rank of the answer among the sorted values in the window.
    const k = Math.floor(Math.min(1, Math.max(0, q)) * (count - 1))
    const store = this.merged
    if (k >= count / 2) {
      // High quantiles (p99) are found faster from the top.
      const need = count - k
      let above = 0
      for (let i = store.hi; i >= store.lo; i--) {
        above += store.counts[i - store.offset]!
        if (above >= need) return this.representative(i)
      }
      return 0
    }
    let seen = this.mergedZero
    if (seen > k) return 0
    for (let i = store.lo; i <= store.hi; i++) {
      seen += store.counts[i - store.offset]!
      if (seen > k) return this.representative(i)
    }
    // Unreachable while counts are consistent; the largest bucket is the safe answer.
    return this.representative(store.hi)
  }

  private representative(index: number): number {
    return (2 * Math.pow(this.gamma, index)) / (this.gamma + 1)
  }

  /** Forgets everything. */
  reset(): void {
    for (const slot of this.slots) {
      slot.store.clear()
      slot.zero = 0
    }
    this.merged.clear()
    this.mergedZero = 0
    this.last = Number.NEGATIVE_INFINITY
  }
}

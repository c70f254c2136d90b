/**
 * A small windowed median: the last `capacity` samples younger than `windowMillis`,
 * kept in a ring buffer; the median is recomputed (copy + sort) only when asked after
 * something changed, and at most once per `refreshMillis`, so asking on every
 * response costs a comparison.
 *
 * @internal
 */
export class MedianWindow {
  private readonly times: Float64Array
  private readonly values: Float64Array
  private next = 0
  private size = 0
  private dirty = false
  private cached: number | undefined = undefined
  private computedAt = Number.NEGATIVE_INFINITY
  private oldestCounted = Number.POSITIVE_INFINITY
  constructor(
    readonly capacity: number,
    readonly windowMillis: number,
    readonly refreshMillis: number
  ) {
    this.times = new Float64Array(capacity)
    this.values = new Float64Array(capacity)
  }
  add(nowMillis: number, value: number): void {
    if (!Number.isFinite(value) || value < 0) return
    this.times[this.next] = nowMillis
    this.values[this.next] = value
    this.next = (this.next + 1) % this.capacity
    if (this.size < this.capacity) this.size++
    this.dirty = true
  }
  /** The median of the samples in the window, or `undefined` when there are none. */
  median(nowMillis: number): number | undefined {
    const expired = nowMillis - this.windowMillis >= this.oldestCounted
    if (!this.dirty && !expired) return this.cached
    if (this.cached !== undefined && nowMillis - this.computedAt < this.refreshMillis) return this.cached
    const live: Array<number> = []
    let oldest = Number.POSITIVE_INFINITY
    for (let i = 0; i < this.size; i++) {
      const t = this.times[i]!
      if (nowMillis - t < this.windowMillis) {
        live.push(this.values[i]!)
        if (t < oldest) oldest = t
      }
    }
    this.dirty = false
    this.computedAt = nowMillis
    this.oldestCounted = oldest
    if (live.length === 0) {
      this.cached = undefined
      return undefined
    }
    live.sort((a, b) => a - b)
    const mid = live.length >> 1
    this.cached = live.length % 2 === 1 ? live[mid]! : (live[mid - 1]! + live[mid]!) / 2
    return this.cached
  }
}

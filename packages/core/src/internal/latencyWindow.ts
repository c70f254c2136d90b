import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Option from "effect/Option"
import { pipeArguments } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import type * as LW from "../LatencyWindow.js"
import * as Options from "./options.js"

/** @internal */
export const TypeId: typeof LW.TypeId = Symbol.for("@sluice/core/LatencyWindow") as any

/** @internal */
export const MIN_TRACKABLE = 1e-4
/** @internal */
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

class LatencyWindowImpl implements LW.LatencyWindow {
  readonly [TypeId]: LW.TypeId = TypeId
  private readonly width: number
  private readonly lnGamma: number
  private readonly gamma: number
  private readonly slots: Array<Slot>
  private readonly merged = new DenseStore()
  private mergedZero = 0
  private last = Number.NEGATIVE_INFINITY

  constructor(
    readonly window: Duration.Duration,
    readonly subWindows: number,
    readonly relativeAccuracy: number
  ) {
    this.width = Duration.toMillis(window) / subWindows
    this.gamma = (1 + relativeAccuracy) / (1 - relativeAccuracy)
    this.lnGamma = Math.log(this.gamma)
    this.slots = Array.from({ length: subWindows }, () => new Slot())
  }

  readonly pipe = (...args: ReadonlyArray<unknown>): unknown => {
    return pipeArguments(this, args as unknown as IArguments)
  }

  private expire(slot: Slot): void {
    if (slot.zero === 0 && slot.store.total === 0) return
    this.merged.subtract(slot.store)
    this.mergedZero -= slot.zero
    slot.store.clear()
    slot.zero = 0
  }

  private advance(nowMillis: number): number {
    const index = Math.floor(nowMillis / this.width)
    if (index <= this.last) return this.last
    const n = this.subWindows
    const steps = this.last === Number.NEGATIVE_INFINITY ? n : Math.min(index - this.last, n)
    for (let k = 1; k <= steps; k++) {
      this.expire(this.slots[(((index - steps + k) % n) + n) % n]!)
    }
    this.last = index
    return index
  }

  readonly unsafeRecord = (nowMillis: number, millis: number): void => {
    if (!(millis >= 0) || millis === Infinity) return
    const index = this.advance(nowMillis)
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

  readonly unsafeCount = (nowMillis: number): number => {
    this.advance(nowMillis)
    return this.mergedZero + this.merged.total
  }

  readonly unsafeQuantile = (nowMillis: number, q: number): number | undefined => {
    if (Number.isNaN(q)) return undefined
    this.advance(nowMillis)
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

  readonly unsafeReset = (): void => {
    for (const slot of this.slots) {
      slot.store.clear()
      slot.zero = 0
    }
    this.merged.clear()
    this.mergedZero = 0
    this.last = Number.NEGATIVE_INFINITY
  }
}

const RelativeAccuracy = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && n > 0 && n < 1, {
    message: (issue) => `expected a relative accuracy in (0, 1), got ${String(issue.actual)}`
  })
)

/** @internal */
export const LatencyWindowOptions = Schema.Struct({
  window: Options.PositiveDuration,
  subWindows: Schema.optionalWith(Options.PositiveInt, { default: () => 6 }),
  relativeAccuracy: Schema.optionalWith(RelativeAccuracy, { default: () => 0.01 })
})

const decode = Options.decodeSync("LatencyWindow", LatencyWindowOptions)
const decodeEffect = Options.decode("LatencyWindow", LatencyWindowOptions)

/** @internal */
export const unsafeMake = (options: LW.LatencyWindowOptions): LW.LatencyWindow => {
  const { relativeAccuracy, subWindows, window } = decode(options)
  return new LatencyWindowImpl(window, subWindows, relativeAccuracy)
}

/** @internal */
export const make = (
  options: LW.LatencyWindowOptions
): Effect.Effect<LW.LatencyWindow, Options.InvalidOptions> =>
  Effect.map(
    decodeEffect(options),
    ({ relativeAccuracy, subWindows, window }) =>
      new LatencyWindowImpl(window, subWindows, relativeAccuracy) as LW.LatencyWindow
  )

const isLatencyWindow = (u: unknown): u is LW.LatencyWindow =>
  typeof u === "object" && u !== null && TypeId in u

/** @internal */
export const record = dual(
  (args) => isLatencyWindow(args[0]),
  (self: LW.LatencyWindow, millis: number): Effect.Effect<void> =>
    Effect.map(Clock.currentTimeMillis, (now) => self.unsafeRecord(now, millis))
)

/** @internal */
export const quantile = dual(
  (args) => isLatencyWindow(args[0]),
  (self: LW.LatencyWindow, q: number): Effect.Effect<Option.Option<number>> =>
    Effect.map(Clock.currentTimeMillis, (now) => Option.fromNullable(self.unsafeQuantile(now, q)))
)

/** @internal */
export const median = (self: LW.LatencyWindow): Effect.Effect<Option.Option<number>> => quantile(self, 0.5)

/** @internal */
export const p99 = (self: LW.LatencyWindow): Effect.Effect<Option.Option<number>> => quantile(self, 0.99)

/** @internal */
export const count = (self: LW.LatencyWindow): Effect.Effect<number> =>
  Effect.map(Clock.currentTimeMillis, (now) => self.unsafeCount(now))

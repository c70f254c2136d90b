import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as RC from "../RollingCounter.js"
import { pipeArguments } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import * as Options from "./options.js"

/** @internal */
export const TypeId: typeof RC.TypeId = Symbol.for("@sluice/core/RollingCounter") as any

class RollingCounterImpl implements RC.RollingCounter {
  readonly [TypeId]: RC.TypeId = TypeId
  private readonly counts: Float64Array
  private readonly width: number
  private last = Number.NEGATIVE_INFINITY
  /** The slot of bucket `last`. */
  private slot = 0
  private sum = 0
  constructor(
    readonly window: Duration.Duration,
    readonly buckets: number
  ) {
    this.counts = new Float64Array(buckets)
    this.width = Duration.toMillis(window) / buckets
  }
  private advance(nowMillis: number): number {
    const index = Math.floor(nowMillis / this.width)
    if (index <= this.last) return this.last
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
    return index
  }
  readonly unsafeAdd = (nowMillis: number, amount = 1): void => {
    this.advance(nowMillis)
    this.counts[this.slot]! += amount
    this.sum += amount
  }
  readonly unsafeTotal = (nowMillis: number): number => {
    this.advance(nowMillis)
    return this.sum
  }
  readonly pipe = (...args: ReadonlyArray<unknown>): unknown => {
    return pipeArguments(this, args as unknown as IArguments)
  }
  readonly unsafeReset = (): void => {
    this.counts.fill(0)
    this.sum = 0
    this.last = Number.NEGATIVE_INFINITY
    this.slot = 0
  }
}

/** @internal */
export const RollingCounterOptions = Schema.Struct({
  window: Options.PositiveDuration,
  buckets: Schema.optionalWith(Options.PositiveInt, { default: () => 10 })
})

const decode = Options.decodeSync("RollingCounter", RollingCounterOptions)
const decodeEffect = Options.decode("RollingCounter", RollingCounterOptions)

/** @internal */
export const unsafeMake = (options: RC.RollingCounterOptions): RC.RollingCounter => {
  const { buckets, window } = decode(options)
  return new RollingCounterImpl(window, buckets)
}

/** @internal */
export const make = (options: RC.RollingCounterOptions) =>
  Effect.map(
    decodeEffect(options),
    ({ buckets, window }) => new RollingCounterImpl(window, buckets) as RC.RollingCounter
  )

/** @internal */
export const add = dual(
  (args) => typeof args[0] === "object" && args[0] !== null && TypeId in args[0],
  (self: RC.RollingCounter, amount = 1): Effect.Effect<void> =>
    Effect.map(Clock.currentTimeMillis, (now) => self.unsafeAdd(now, amount))
)

/** @internal */
export const total = (self: RC.RollingCounter): Effect.Effect<number> =>
  Effect.map(Clock.currentTimeMillis, (now) => self.unsafeTotal(now))

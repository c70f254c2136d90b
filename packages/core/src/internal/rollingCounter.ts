import * as Kernel from "@sluice/kernel/stats/RollingCounter"
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

class RollingCounterImpl extends Kernel.RollingCounter implements RC.RollingCounter {
  readonly [TypeId]: RC.TypeId = TypeId
  constructor(
    readonly window: Duration.Duration,
    buckets: number
  ) {
    super({ windowMillis: Duration.toMillis(window), buckets })
  }
  readonly unsafeAdd = (nowMillis: number, amount?: number): void => this.add(nowMillis, amount)
  readonly unsafeTotal = (nowMillis: number): number => this.total(nowMillis)
  readonly unsafeReset = (): void => this.reset()
  readonly pipe = (...args: ReadonlyArray<unknown>): unknown => {
    return pipeArguments(this, args as unknown as IArguments)
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

import * as Kernel from "@sluice/kernel/stats/RollingCounter"
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import { pipeArguments } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import type * as RC from "../RollingCounter.js"
import * as Options from "./options.js"

/** @internal */
export const TypeId: typeof RC.TypeId = Symbol.for("@sluice/core/RollingCounter") as any

const RollingCounterOptions = Schema.Struct(Options.fields(Kernel.options))

class RollingCounterImpl extends Kernel.RollingCounter implements RC.RollingCounter {
  readonly [TypeId]: RC.TypeId = TypeId
  readonly window: Duration.Duration
  constructor(options: typeof RollingCounterOptions.Type) {
    super({ ...options, windowMillis: Duration.toMillis(options.window) })
    this.window = options.window
  }
  readonly addUnsafe = (nowMillis: number, amount?: number): void => this.add(nowMillis, amount)
  readonly totalUnsafe = (nowMillis: number): number => this.total(nowMillis)
  readonly resetUnsafe = (): void => this.reset()
  readonly pipe = (...args: ReadonlyArray<unknown>): unknown => {
    return pipeArguments(this, args as unknown as IArguments)
  }
}

/** @internal */
export const { make, makeUnsafe } = Options.constructors(
  "RollingCounter",
  RollingCounterOptions,
  (options) => new RollingCounterImpl(options)
)

/** @internal */
export const add = dual(
  (args) => typeof args[0] === "object" && args[0] !== null && TypeId in args[0],
  (self: RC.RollingCounter, amount = 1): Effect.Effect<void> =>
    Options.atNow((now) => self.addUnsafe(now, amount))
)

/** @internal */
export const total = (self: RC.RollingCounter): Effect.Effect<number> =>
  Options.atNow((now) => self.totalUnsafe(now))

import * as Kernel from "@sluice/kernel/stats/LatencyWindow"
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Option from "effect/Option"
import { pipeArguments } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import type * as LW from "../LatencyWindow.js"
import * as Options from "./options.js"

/** @internal */
export const TypeId: typeof LW.TypeId = Symbol.for("@sluice/core/LatencyWindow") as any

const LatencyWindowOptions = Schema.Struct(Options.fields(Kernel.options))

class LatencyWindowImpl extends Kernel.LatencyWindow implements LW.LatencyWindow {
  readonly [TypeId]: LW.TypeId = TypeId
  readonly window: Duration.Duration
  constructor(options: typeof LatencyWindowOptions.Type) {
    super({ ...options, windowMillis: Duration.toMillis(options.window) })
    this.window = options.window
  }
  readonly recordUnsafe = (nowMillis: number, millis: number): void => this.record(nowMillis, millis)
  readonly quantileUnsafe = (nowMillis: number, q: number): number | undefined => this.quantile(nowMillis, q)
  readonly countUnsafe = (nowMillis: number): number => this.count(nowMillis)
  readonly resetUnsafe = (): void => this.reset()
  readonly pipe = (...args: ReadonlyArray<unknown>): unknown => {
    return pipeArguments(this, args as unknown as IArguments)
  }
}

/** @internal */
export const { make, makeUnsafe } = Options.constructors(
  "LatencyWindow",
  LatencyWindowOptions,
  (options) => new LatencyWindowImpl(options)
)

const isLatencyWindow = (u: unknown): u is LW.LatencyWindow =>
  typeof u === "object" && u !== null && TypeId in u

/** @internal */
export const record = dual(
  (args) => isLatencyWindow(args[0]),
  (self: LW.LatencyWindow, millis: number): Effect.Effect<void> =>
    Options.atNow((now) => self.recordUnsafe(now, millis))
)

/** @internal */
export const quantile = dual(
  (args) => isLatencyWindow(args[0]),
  (self: LW.LatencyWindow, q: number): Effect.Effect<Option.Option<number>> =>
    Options.atNow((now) => Option.fromNullishOr(self.quantileUnsafe(now, q)))
)

/** @internal */
export const median = (self: LW.LatencyWindow): Effect.Effect<Option.Option<number>> => quantile(self, 0.5)

/** @internal */
export const p99 = (self: LW.LatencyWindow): Effect.Effect<Option.Option<number>> => quantile(self, 0.99)

/** @internal */
export const count = (self: LW.LatencyWindow): Effect.Effect<number> =>
  Options.atNow((now) => self.countUnsafe(now))

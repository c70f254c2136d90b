import * as Kernel from "@sluice/kernel/stats/LatencyWindow"
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

class LatencyWindowImpl extends Kernel.LatencyWindow implements LW.LatencyWindow {
  readonly [TypeId]: LW.TypeId = TypeId
  constructor(
    readonly window: Duration.Duration,
    subWindows: number,
    relativeAccuracy: number
  ) {
    super({ windowMillis: Duration.toMillis(window), subWindows, relativeAccuracy })
  }
  readonly unsafeRecord = (nowMillis: number, millis: number): void => this.record(nowMillis, millis)
  readonly unsafeQuantile = (nowMillis: number, q: number): number | undefined => this.quantile(nowMillis, q)
  readonly unsafeCount = (nowMillis: number): number => this.count(nowMillis)
  readonly unsafeReset = (): void => this.reset()
  readonly pipe = (...args: ReadonlyArray<unknown>): unknown => {
    return pipeArguments(this, args as unknown as IArguments)
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

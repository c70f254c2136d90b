import * as Kernel from "@sluice/kernel/stats/Ewma"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Schema from "effect/Schema"
import type * as E from "../Ewma.js"
import * as Options from "./options.js"

/** @internal */
export const EwmaOptions = Schema.Struct({ tau: Options.PositiveDuration })

/** @internal */
export const EwmaRateOptions = Schema.Struct({
  window: Options.PositiveDuration,
  tick: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.seconds(5) })
}).pipe(
  Schema.filter((o) =>
    Duration.lessThanOrEqualTo(o.tick, o.window) ? undefined : "tick must not exceed window"
  )
)

class EwmaImpl extends Kernel.Ewma implements E.Ewma {
  constructor(readonly tau: Duration.Duration) {
    super({ tauMillis: Duration.toMillis(tau) })
  }
  readonly unsafeUpdate = (nowMillis: number, sample: number): void => this.update(nowMillis, sample)
  readonly unsafeValue = (): number | undefined => this.value()
}

class EwmaRateImpl extends Kernel.EwmaRate implements E.EwmaRate {
  constructor(
    readonly window: Duration.Duration,
    readonly tick: Duration.Duration
  ) {
    super({ windowMillis: Duration.toMillis(window), tickMillis: Duration.toMillis(tick) })
  }
  readonly unsafeMark = (nowMillis: number, n?: number): void => this.mark(nowMillis, n)
  readonly unsafeRate = (nowMillis: number): number => this.rate(nowMillis)
}

const decodeEwma = Options.decodeSync("Ewma", EwmaOptions)
const decodeRate = Options.decodeSync("EwmaRate", EwmaRateOptions as Schema.Schema<any, E.EwmaRateOptions>)

/** @internal */
export const unsafeMake = (options: E.EwmaOptions): E.Ewma => new EwmaImpl(decodeEwma(options).tau)

/** @internal */
export const make = (options: E.EwmaOptions) =>
  Effect.map(Options.decode("Ewma", EwmaOptions)(options), (o) => new EwmaImpl(o.tau) as E.Ewma)

/** @internal */
export const unsafeMakeRate = (options: E.EwmaRateOptions): E.EwmaRate => {
  const o = decodeRate(options)
  return new EwmaRateImpl(o.window, o.tick)
}

/** @internal */
export const makeRate = (options: E.EwmaRateOptions) =>
  Effect.map(
    Options.decode("EwmaRate", EwmaRateOptions as Schema.Schema<any, E.EwmaRateOptions>)(options),
    (o) => new EwmaRateImpl(o.window, o.tick) as E.EwmaRate
  )

/** @internal */
export const update = dual(2, (self: E.Ewma, sample: number) =>
  Effect.map(Clock.currentTimeMillis, (now) => self.unsafeUpdate(now, sample))
)

/** @internal */
export const value = (self: E.Ewma) => Effect.sync(() => self.unsafeValue() ?? 0)

/** @internal */
export const mark = dual(
  (args) => typeof args[0] === "object" && args[0] !== null && "unsafeMark" in args[0],
  (self: E.EwmaRate, n = 1) => Effect.map(Clock.currentTimeMillis, (now) => self.unsafeMark(now, n))
)

/** @internal */
export const rate = (self: E.EwmaRate) => Effect.map(Clock.currentTimeMillis, (now) => self.unsafeRate(now))

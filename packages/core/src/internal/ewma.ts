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

class EwmaImpl implements E.Ewma {
  private readonly tauMillis: number
  private current: number | undefined = undefined
  private lastMillis = 0
  constructor(readonly tau: Duration.Duration) {
    this.tauMillis = Duration.toMillis(tau)
  }
  readonly unsafeUpdate = (nowMillis: number, sample: number): void => {
    if (!Number.isFinite(sample)) return
    if (this.current === undefined) {
      this.current = sample
    } else {
      const dt = Math.max(0, nowMillis - this.lastMillis)
      const alpha = 1 - Math.exp(-dt / this.tauMillis)
      this.current += alpha * (sample - this.current)
    }
    this.lastMillis = Math.max(this.lastMillis, nowMillis)
  }
  readonly unsafeValue = (): number | undefined => {
    return this.current
  }
}

class EwmaRateImpl implements E.EwmaRate {
  private readonly tickMillis: number
  private readonly alpha: number
  private pending = 0
  private ratePerMs = 0
  private initialized = false
  private tickIndex: number | undefined = undefined
  constructor(
    readonly window: Duration.Duration,
    readonly tick: Duration.Duration
  ) {
    this.tickMillis = Duration.toMillis(tick)
    this.alpha = 1 - Math.exp(-this.tickMillis / Duration.toMillis(window))
  }
  private catchUp(nowMillis: number): void {
    const index = Math.floor(nowMillis / this.tickMillis)
    if (this.tickIndex === undefined) {
      this.tickIndex = index
      return
    }
    const elapsed = index - this.tickIndex
    if (elapsed <= 0) return
    // The first elapsed tick folds in what was counted; the rest were silent.
    const instant = this.pending / this.tickMillis
    this.pending = 0
    if (this.initialized) {
      this.ratePerMs += this.alpha * (instant - this.ratePerMs)
    } else {
      this.ratePerMs = instant
      this.initialized = true
    }
    if (elapsed > 1) this.ratePerMs *= Math.pow(1 - this.alpha, elapsed - 1)
    this.tickIndex = index
  }
  readonly unsafeMark = (nowMillis: number, n = 1): void => {
    this.catchUp(nowMillis)
    this.pending += n
  }
  readonly unsafeRate = (nowMillis: number): number => {
    this.catchUp(nowMillis)
    return this.ratePerMs * 1000
  }
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

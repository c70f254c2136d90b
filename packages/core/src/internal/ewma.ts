import * as Kernel from "@sluice/kernel/stats/Ewma"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Schema from "effect/Schema"
import type * as E from "../Ewma.js"
import * as Options from "./options.js"

class EwmaImpl extends Kernel.Ewma implements E.Ewma {
  constructor(readonly tau: Duration.Duration) {
    super({ tauMillis: Duration.toMillis(tau) })
  }
  readonly updateUnsafe = (nowMillis: number, sample: number): void => this.update(nowMillis, sample)
  readonly valueUnsafe = (): number | undefined => this.value()
}

class EwmaRateImpl extends Kernel.EwmaRate implements E.EwmaRate {
  constructor(
    readonly window: Duration.Duration,
    readonly tick: Duration.Duration
  ) {
    super({ windowMillis: Duration.toMillis(window), tickMillis: Duration.toMillis(tick) })
  }
  readonly markUnsafe = (nowMillis: number, n?: number): void => this.mark(nowMillis, n)
  readonly rateUnsafe = (nowMillis: number): number => this.rate(nowMillis)
}

const EwmaRateFields = Schema.Struct(Options.fields(Kernel.rateOptions))

const EwmaRateOptions = EwmaRateFields.check(
  Schema.makeFilter<typeof EwmaRateFields.Type>((o) =>
    Kernel.tickIssue(Duration.toMillis(o.window), Duration.toMillis(o.tick))
  )
)

/** @internal */
export const { make, makeUnsafe } = Options.constructors(
  "Ewma",
  Schema.Struct(Options.fields(Kernel.options)),
  (o) => new EwmaImpl(o.tau)
)

/** @internal */
export const { make: makeRate, makeUnsafe: makeRateUnsafe } = Options.constructors(
  "EwmaRate",
  EwmaRateOptions,
  (o) => new EwmaRateImpl(o.window, o.tick)
)

/** @internal */
export const update = dual(2, (self: E.Ewma, sample: number) =>
  Options.atNow((now) => self.updateUnsafe(now, sample))
)

/** @internal */
export const value = (self: E.Ewma) => Effect.sync(() => self.valueUnsafe() ?? 0)

/** @internal */
export const mark = dual(
  (args) => typeof args[0] === "object" && args[0] !== null && "markUnsafe" in args[0],
  (self: E.EwmaRate, n = 1) => Options.atNow((now) => self.markUnsafe(now, n))
)

/** @internal */
export const rate = (self: E.EwmaRate) => Options.atNow((now) => self.rateUnsafe(now))

import { Options } from "@sluice/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as CW from "../CongestionWindow.js"
import type * as LA from "../LimitAlgorithm.js"
import { checkBounds, OpenRatio, PositiveOrInfinity } from "./limitAlgorithm.js"
import { bindMethods } from "./bind.js"

/** @internal */
export const CongestionWindowOptions = Schema.Struct({
  initial: Schema.optionalWith(Options.PositiveNumber, { default: () => 20 }),
  ssthresh: Schema.optionalWith(Options.PositiveNumber, { default: () => 1024 }),
  factor: Schema.optionalWith(OpenRatio, { default: () => 0.5 }),
  variant: Schema.optionalWith(Schema.Literal("tahoe", "reno"), { default: () => "reno" as const }),
  minLimit: Schema.optionalWith(Options.PositiveNumber, { default: () => 1 }),
  maxLimit: Schema.optionalWith(PositiveOrInfinity, { default: () => Infinity })
}).pipe(
  Schema.filter((o) =>
    checkBounds([
      ["minLimit", o.minLimit],
      ["initial", o.initial],
      ["maxLimit", o.maxLimit]
    ])
  )
)

const module = "CongestionWindow"
const decodeSync = Options.decodeSync(module, CongestionWindowOptions)
const decodeEffect = Options.decode(module, CongestionWindowOptions)

class CongestionWindowImpl implements CW.CongestionWindow {
  protected readonly bound = bindMethods(this, ["onSample"])
  readonly name: string
  /** The window counts requests, never time: its samples need no clock read. */
  readonly usesTime = false
  cwnd: number
  ssthresh: number
  ignoreBelow = 0
  constructor(readonly options: CW.CongestionWindowConfig) {
    this.name = `congestion-window(${options.variant})`
    this.cwnd = options.initial
    this.ssthresh = options.ssthresh
  }
  get limit(): number {
    return this.cwnd
  }
  onSample(sample: LA.Sample): number {
    if (sample.outcome === "success") {
      const cwnd = this.cwnd
      // Idle capacity must not inflate the window: growth stops at in-flight + 1.
      const grown = Math.min(
        cwnd + (cwnd < this.ssthresh ? 1 : 1 / cwnd),
        sample.inFlight + 1,
        this.options.maxLimit
      )
      if (grown > cwnd) this.cwnd = grown
    } else if (sample.outcome === "dropped" && sample.id >= this.ignoreBelow) {
      const { factor, initial, maxLimit, minLimit, variant } = this.options
      this.ssthresh = Math.max(minLimit, this.cwnd * factor)
      this.cwnd = Math.min(maxLimit, Math.max(minLimit, variant === "tahoe" ? initial : this.ssthresh))
      // Everything in flight now belongs to the same burst: its errors count once.
      this.ignoreBelow = sample.nextId
    }
    return this.cwnd
  }
}

/** @internal */
export const unsafeMake = (options: CW.CongestionWindowOptions = {}): CW.CongestionWindow =>
  new CongestionWindowImpl(decodeSync(options))

/** @internal */
export const make = (
  options: CW.CongestionWindowOptions = {}
): Effect.Effect<CW.CongestionWindow, Options.InvalidOptions> =>
  Effect.map(decodeEffect(options), (config) => new CongestionWindowImpl(config))

/** @internal */
export const factory = (options: CW.CongestionWindowOptions = {}): LA.Factory => {
  const config = decodeSync(options)
  return () => new CongestionWindowImpl(config)
}

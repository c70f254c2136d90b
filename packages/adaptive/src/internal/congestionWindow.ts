import { Options } from "@sluice/core"
import * as Schema from "effect/Schema"
import type * as CW from "../CongestionWindow.js"
import type * as LA from "../LimitAlgorithm.js"
import { algorithm, boundsFields, boundsIssues, OpenRatio } from "./limitAlgorithm.js"
import { bindMethods } from "./bind.js"

/** @internal */
export const CongestionWindowOptions = Schema.Struct({
  ...boundsFields,
  ssthresh: Schema.optionalWith(Options.PositiveNumber, { default: () => 1024 }),
  backoffRatio: Schema.optionalWith(OpenRatio, { default: () => 0.5 }),
  variant: Schema.optionalWith(Schema.Literal("tahoe", "reno"), { default: () => "reno" as const })
}).pipe(Schema.filter((o) => boundsIssues(o)))

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
      const { backoffRatio, initial, maxLimit, minLimit, variant } = this.options
      this.ssthresh = Math.max(minLimit, this.cwnd * backoffRatio)
      this.cwnd = Math.min(maxLimit, Math.max(minLimit, variant === "tahoe" ? initial : this.ssthresh))
      // Everything in flight now belongs to the same burst: its errors count once.
      this.ignoreBelow = sample.nextId
    }
    return this.cwnd
  }
}

const congestionWindow = algorithm<
  CW.CongestionWindowOptions,
  typeof CongestionWindowOptions.Type,
  CW.CongestionWindow
>("CongestionWindow", CongestionWindowOptions, (config) => new CongestionWindowImpl(config))

/** @internal */
export const unsafeMake = congestionWindow.unsafeMake
/** @internal */
export const make = congestionWindow.make
/** @internal */
export const factory = congestionWindow.factory

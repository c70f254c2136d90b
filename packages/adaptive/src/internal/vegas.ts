import { Options } from "@sluice/core"
import * as Schema from "effect/Schema"
import type * as LA from "../LimitAlgorithm.js"
import type * as V from "../Vegas.js"
import { algorithm, boundsFields, boundsIssues, OpenRatio, Smoothing } from "./limitAlgorithm.js"
import { bindMethods } from "./bind.js"

/** @internal */
export const VegasOptions = Schema.Struct({
  ...boundsFields,
  alpha: Schema.optionalWith(Options.PositiveNumber, { default: () => 3 }),
  beta: Schema.optionalWith(Options.PositiveNumber, { default: () => 6 }),
  smoothing: Schema.optionalWith(Smoothing, { default: () => 1 }),
  backoffRatio: Schema.optionalWith(OpenRatio, { default: () => 0.9 }),
  probeMultiplier: Schema.optionalWith(Options.PositiveInt, { default: () => 30 })
}).pipe(
  Schema.filter((o) => {
    const issues = boundsIssues(o)
    if (o.alpha >= o.beta) {
      issues.push({ path: ["alpha"], message: `alpha (${o.alpha}) must be below beta (${o.beta})` })
    }
    return issues
  })
)

class VegasImpl implements V.Vegas {
  protected readonly bound = bindMethods(this, ["onSample"])
  readonly name = "vegas"
  limit: number
  noLoadRtt: number | undefined = undefined
  ignoreBelow = 0
  decidedBelow = 0
  probing = false
  private sinceProbe = 0
  private probeFrom = 0
  private probeSeen = 0
  private probeMin = Infinity
  private probeRestore = 0
  constructor(readonly options: V.VegasConfig) {
    this.limit = options.initial
  }
  private clamp(n: number): number {
    return Math.min(this.options.maxLimit, Math.max(this.options.minLimit, n))
  }
  private set(target: number): number {
    const smoothing = this.options.smoothing
    this.limit = this.clamp((1 - smoothing) * this.limit + smoothing * this.clamp(target))
    return this.limit
  }
  onSample(sample: LA.Sample): number {
    if (sample.outcome === "dropped") {
      // A drop comes back fast: its latency says nothing about queueing and must
      // never become the no-load latency. Back off once per burst.
      if (sample.id < this.ignoreBelow) return this.limit
      this.ignoreBelow = sample.nextId
      this.decidedBelow = sample.nextId
      if (this.probing) {
        this.probing = false
        this.limit = this.probeRestore
      }
      return this.set(this.limit * this.options.backoffRatio)
    }
    if (sample.outcome !== "success" || !(sample.rtt > 0)) return this.limit
    const rtt = sample.rtt
    const newMinimum = this.noLoadRtt === undefined || rtt < this.noLoadRtt
    const noLoadRtt = newMinimum ? rtt : this.noLoadRtt!
    this.noLoadRtt = noLoadRtt
    if (this.probing) return this.probe(sample)
    // A queue that never drains would hide the true no-load latency forever (and a
    // backend may become slower for good): every probeMultiplier × limit successes,
    // halve the limit for one round trip and re-learn it from that round.
    if (++this.sinceProbe >= this.options.probeMultiplier * this.limit) {
      this.sinceProbe = 0
      this.probing = true
      this.probeRestore = this.limit
      this.probeFrom = sample.nextId
      this.probeSeen = 0
      this.probeMin = Infinity
      this.limit = this.clamp(this.limit / 2)
      return this.limit
    }
    // A new minimum is a new baseline, not a measurement against the old one: like
    // Netflix's VegasLimit, take it and leave the limit for the next sample to judge.
    if (newMinimum) return this.limit
    // An unused limit says nothing about capacity.
    if (sample.inFlight * 2 < this.limit) return this.limit
    // One decision per round trip: requests sent before the last change measure the old limit.
    if (sample.id < this.decidedBelow) return this.limit
    const step = Math.max(1, Math.log10(this.limit))
    const queued = this.limit * (1 - noLoadRtt / rtt)
    const { alpha, beta } = this.options
    let target: number
    if (queued <= step) target = this.limit + beta * step
    else if (queued < alpha * step) target = this.limit + step
    else if (queued > beta * step) target = this.limit - step
    else return this.limit
    this.decidedBelow = sample.nextId
    return this.set(target)
  }
  private probe(sample: LA.Sample): number {
    if (sample.id < this.probeFrom) return this.limit
    this.probeMin = Math.min(this.probeMin, sample.rtt)
    if (++this.probeSeen >= Math.max(1, Math.floor(this.limit))) {
      this.noLoadRtt = this.probeMin
      this.probing = false
      this.limit = this.probeRestore
      this.decidedBelow = sample.nextId
    }
    return this.limit
  }
}

const vegas = algorithm<V.VegasOptions, typeof VegasOptions.Type, V.Vegas>(
  "Vegas",
  VegasOptions,
  (config) => new VegasImpl(config)
)

/** @internal */
export const unsafeMake = vegas.unsafeMake
/** @internal */
export const make = vegas.make
/** @internal */
export const factory = vegas.factory

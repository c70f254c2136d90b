import { Options, Ratio } from "@sluice/core"
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import type * as A from "../Aimd.js"
import type * as LA from "../LimitAlgorithm.js"
import { algorithm, boundsFields, boundsIssues, OpenRatio } from "./limitAlgorithm.js"
import { bindMethods } from "./bind.js"

/** @internal */
export const AimdOptions = Schema.Struct({
  ...boundsFields,
  backoffRatio: Schema.optionalWith(OpenRatio, { default: () => 0.9 }),
  timeout: Schema.optional(Options.PositiveDuration)
}).pipe(Schema.filter(boundsIssues))

class AimdImpl implements A.Aimd {
  protected readonly bound = bindMethods(this, ["onSample"])
  readonly name = "aimd"
  limit: number
  private readonly timeoutMillis: number
  private readonly backoff: Ratio.ExactRatio
  constructor(readonly options: A.AimdConfig) {
    this.limit = options.initial
    this.backoff = Ratio.make(options.backoffRatio)
    this.timeoutMillis = options.timeout === undefined ? Infinity : Duration.toMillis(options.timeout)
  }
  onSample(sample: LA.Sample): number {
    const { maxLimit, minLimit } = this.options
    if (sample.outcome === "dropped" || (sample.outcome === "success" && sample.rtt > this.timeoutMillis)) {
      // Exact: 30 × 0.9 is 27 (26.999999999999996 in floating point).
      this.limit = Math.max(minLimit, this.backoff.floorTimes(this.limit))
    } else if (sample.outcome === "success" && sample.inFlight * 2 >= this.limit) {
      // Only a limit that is actually used may grow.
      this.limit = Math.min(maxLimit, this.limit + 1)
    }
    return this.limit
  }
}

const aimd = algorithm<A.AimdOptions, typeof AimdOptions.Type, A.Aimd>(
  "Aimd",
  AimdOptions,
  (config) => new AimdImpl(config)
)

/** @internal */
export const unsafeMake = aimd.unsafeMake
/** @internal */
export const make = aimd.make
/** @internal */
export const factory = aimd.factory

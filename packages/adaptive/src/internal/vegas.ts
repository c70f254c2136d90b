import { Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/limit/Vegas"
import * as Schema from "effect/Schema"
import type * as V from "../Vegas.js"
import { algorithm, boundsFields, OpenRatio, Smoothing } from "./limitAlgorithm.js"
import { bindMethods } from "./bind.js"

/** @internal */
export const VegasOptions = Schema.Struct({
  ...boundsFields,
  alpha: Schema.optionalWith(Options.PositiveNumber, { default: () => 3 }),
  beta: Schema.optionalWith(Options.PositiveNumber, { default: () => 6 }),
  smoothing: Schema.optionalWith(Smoothing, { default: () => 1 }),
  backoffRatio: Schema.optionalWith(OpenRatio, { default: () => 0.9 }),
  probeMultiplier: Schema.optionalWith(Options.PositiveInt, { default: () => 30 })
}).pipe(Schema.filter(Kernel.issues))

class VegasImpl extends Kernel.Vegas implements V.Vegas {
  protected readonly bound = bindMethods(this, ["onSample"])
  constructor(readonly options: V.VegasConfig) {
    super(options)
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

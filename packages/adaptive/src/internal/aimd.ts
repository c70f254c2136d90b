import { Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/limit/Aimd"
import * as Limit from "@sluice/kernel/limit/Limit"
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import type * as A from "../Aimd.js"
import { algorithm, boundsFields, OpenRatio } from "./limitAlgorithm.js"
import { bindMethods } from "./bind.js"

/** @internal */
export const AimdOptions = Schema.Struct({
  ...boundsFields,
  backoffRatio: Schema.optionalWith(OpenRatio, { default: () => 0.9 }),
  timeout: Schema.optional(Options.PositiveDuration)
}).pipe(Schema.filter(Limit.boundsIssues))

class AimdImpl extends Kernel.Aimd implements A.Aimd {
  protected readonly bound = bindMethods(this, ["onSample"])
  constructor(readonly options: A.AimdConfig) {
    super({
      initial: options.initial,
      minLimit: options.minLimit,
      maxLimit: options.maxLimit,
      backoffRatio: options.backoffRatio,
      timeout: options.timeout === undefined ? Infinity : Duration.toMillis(options.timeout)
    })
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

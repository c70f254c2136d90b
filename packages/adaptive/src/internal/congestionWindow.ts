import { Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/limit/CongestionWindow"
import * as Limit from "@sluice/kernel/limit/Limit"
import * as Schema from "effect/Schema"
import type * as CW from "../CongestionWindow.js"
import { algorithm, boundsFields, OpenRatio } from "./limitAlgorithm.js"
import { bindMethods } from "./bind.js"

/** @internal */
export const CongestionWindowOptions = Schema.Struct({
  ...boundsFields,
  ssthresh: Schema.optionalWith(Options.PositiveNumber, { default: () => 1024 }),
  backoffRatio: Schema.optionalWith(OpenRatio, { default: () => 0.5 }),
  variant: Schema.optionalWith(Schema.Literal("tahoe", "reno"), { default: () => "reno" as const })
}).pipe(Schema.filter((o) => Limit.boundsIssues(o)))

class CongestionWindowImpl extends Kernel.CongestionWindow implements CW.CongestionWindow {
  protected readonly bound = bindMethods(this, ["onSample"])
  constructor(readonly options: CW.CongestionWindowConfig) {
    super(options)
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

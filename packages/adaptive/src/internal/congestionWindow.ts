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
  backoffRatio: Schema.optional(OpenRatio),
  /** Deprecated name of `backoffRatio`. */
  factor: Schema.optional(OpenRatio),
  variant: Schema.optionalWith(Schema.Literal("tahoe", "reno"), { default: () => "reno" as const })
}).pipe(
  Schema.filter((o) => {
    const issues = Limit.boundsIssues(o)
    if (o.backoffRatio !== undefined && o.factor !== undefined && o.backoffRatio !== o.factor) {
      issues.push({
        path: ["factor"],
        message: `factor (${o.factor}) is the deprecated name of backoffRatio (${o.backoffRatio}): give one`
      })
    }
    return issues
  })
)

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
>(
  "CongestionWindow",
  CongestionWindowOptions,
  ({ factor, ...config }) =>
    new CongestionWindowImpl({ ...config, backoffRatio: config.backoffRatio ?? factor ?? 0.5 })
)

/** @internal */
export const unsafeMake = congestionWindow.unsafeMake
/** @internal */
export const make = congestionWindow.make
/** @internal */
export const factory = congestionWindow.factory

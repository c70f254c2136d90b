import { Options } from "@sluice/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Fixed from "@sluice/kernel/limit/Fixed"
import * as Limit from "@sluice/kernel/limit/Limit"
import type * as LA from "../LimitAlgorithm.js"
import { bindMethods } from "./bind.js"

/** @internal A smoothing factor in (0, 1]: 1 keeps only the latest sample. */
export const Smoothing = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && n > 0 && n <= 1, {
    message: (issue) => `expected a number in (0, 1], got ${String(issue.actual)}`
  })
)

/** @internal a number strictly between 0 and 1 */
export const OpenRatio = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && n > 0 && n < 1, {
    message: (issue) => `expected a number strictly between 0 and 1, got ${String(issue.actual)}`
  })
)

/** @internal a positive number, `Infinity` allowed (an unbounded maximum) */
export const PositiveOrInfinity = Schema.Number.pipe(
  Schema.filter((n) => !Number.isNaN(n) && n > 0, {
    message: (issue) => `expected a positive number, got ${String(issue.actual)}`
  })
)

const FixedLimit = Options.PositiveInt
const decodeFixed = Options.decodeSync("LimitAlgorithm.fixed", Schema.Struct({ limit: FixedLimit }))

/** @internal */
export const fixed = (limit: number): LA.LimitAlgorithm => {
  decodeFixed({ limit })
  return bindMethods(new Fixed.Fixed(limit), ["onSample"])
}

// ---------------------------------------------------------------------------
// Shared scaffolding of the limit algorithms (Aimd, CongestionWindow, Vegas): one
// bounds schema and one lazily validating factory; the bounds rule is the kernel's.

/** @internal The bounds every algorithm shares: integers, `maxLimit` may be `Infinity`. */
export const boundsFields = {
  initial: Schema.optional(Options.PositiveInt),
  minLimit: Schema.optionalWith(Options.PositiveInt, { default: () => 1 }),
  maxLimit: Schema.optionalWith(PositiveOrInfinity, { default: () => Limit.DEFAULT_MAX_LIMIT })
}

type Bounds = Parameters<typeof Limit.boundsIssues>[0]

/**
 * @internal The decoders and constructors of one algorithm. `factory(options)` never throws
 * when called: the options are validated the first time the factory is used (the limiter
 * calls it inside `ConcurrencyLimiter.make` / `makeService` / `layer`, which turn the
 * `InvalidOptions` it throws into a typed failure).
 */
export const algorithm = <I, C extends Bounds, A>(
  module: string,
  schema: Schema.Schema<C, any>,
  build: (config: C & { readonly initial: number }) => A
) => {
  const decodeSync = Options.decodeSync(module, schema)
  const decodeEffect = Options.decode(module, schema)
  return {
    unsafeMake: (options: I = {} as I): A => build(Limit.resolveBounds(decodeSync(options))),
    make: (options: I = {} as I): Effect.Effect<A, Options.InvalidOptions> =>
      Effect.map(decodeEffect(options), (config) => build(Limit.resolveBounds(config))),
    factory: (options: I = {} as I): LA.Factory => {
      let config: (C & { readonly initial: number }) | undefined
      return () => {
        if (config === undefined) config = Limit.resolveBounds(decodeSync(options))
        return build(config) as unknown as LA.LimitAlgorithm
      }
    }
  }
}

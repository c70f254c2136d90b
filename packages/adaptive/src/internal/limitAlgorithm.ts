import { Options } from "@sluice/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as LA from "../LimitAlgorithm.js"

/** @internal a number strictly between 0 and 1 */
/** @internal A smoothing factor in (0, 1]: 1 keeps only the latest sample. */
export const Smoothing = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && n > 0 && n <= 1, {
    message: (issue) => `expected a number in (0, 1], got ${String(issue.actual)}`
  })
)

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

/** @internal */
export const checkBounds = (
  fields: ReadonlyArray<readonly [name: string, value: number]>
): Array<{ path: Array<string>; message: string }> => {
  // fields are [min, initial, max] in order: report the first pair out of order by field name
  const issues: Array<{ path: Array<string>; message: string }> = []
  for (let i = 0; i + 1 < fields.length; i++) {
    const [lowName, low] = fields[i]!
    for (let j = i + 1; j < fields.length; j++) {
      const [highName, high] = fields[j]!
      if (low > high) {
        issues.push({ path: [lowName], message: `${lowName} (${low}) must not exceed ${highName} (${high})` })
      }
    }
  }
  return issues
}

const FixedLimit = Options.PositiveInt
const decodeFixed = Options.decodeSync("LimitAlgorithm.fixed", Schema.Struct({ limit: FixedLimit }))

/** @internal */
export const fixed = (limit: number): LA.LimitAlgorithm => {
  decodeFixed({ limit })
  return {
    name: "fixed",
    limit,
    onSample: () => limit,
    usesTime: false
  }
}

// ---------------------------------------------------------------------------
// Shared scaffolding of the limit algorithms (Aimd, CongestionWindow, Vegas): one
// bounds schema, one default rule, one lazily validating factory.

/** @internal The default `initial` limit, clamped into `[minLimit, maxLimit]` when not given. */
export const DEFAULT_INITIAL = 20

/**
 * @internal The default `maxLimit` of every algorithm: finite, so that a limit that only
 * ever hears successes (a backend that never pushes back) cannot grow without bound.
 */
export const DEFAULT_MAX_LIMIT = 1000

/** @internal The bounds every algorithm shares: integers, `maxLimit` may be `Infinity`. */
export const boundsFields = {
  initial: Schema.optional(Options.PositiveInt),
  minLimit: Schema.optionalWith(Options.PositiveInt, { default: () => 1 }),
  maxLimit: Schema.optionalWith(PositiveOrInfinity, { default: () => DEFAULT_MAX_LIMIT })
}

interface Bounds {
  readonly initial?: number | undefined
  readonly minLimit: number
  readonly maxLimit: number
}

/**
 * @internal Issues of the bounds: an explicit `initial` outside `[minLimit, maxLimit]` is
 * an error; a default one is clamped by {@link resolveBounds} instead.
 */
export const boundsIssues = (o: Bounds): Array<{ path: Array<string>; message: string }> =>
  checkBounds(
    o.initial === undefined
      ? [
          ["minLimit", o.minLimit],
          ["maxLimit", o.maxLimit]
        ]
      : [
          ["minLimit", o.minLimit],
          ["initial", o.initial],
          ["maxLimit", o.maxLimit]
        ]
  )

/** @internal Fills in the default `initial`, clamped so the defaults agree with the user's bounds. */
export const resolveBounds = <O extends Bounds>(o: O): O & { readonly initial: number } =>
  o.initial !== undefined
    ? (o as O & { readonly initial: number })
    : { ...o, initial: Math.min(o.maxLimit, Math.max(o.minLimit, DEFAULT_INITIAL)) }

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
    unsafeMake: (options: I = {} as I): A => build(resolveBounds(decodeSync(options))),
    make: (options: I = {} as I): Effect.Effect<A, Options.InvalidOptions> =>
      Effect.map(decodeEffect(options), (config) => build(resolveBounds(config))),
    factory: (options: I = {} as I): LA.Factory => {
      let config: (C & { readonly initial: number }) | undefined
      return () => {
        if (config === undefined) config = resolveBounds(decodeSync(options))
        return build(config) as unknown as LA.LimitAlgorithm
      }
    }
  }
}

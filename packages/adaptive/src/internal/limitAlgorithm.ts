import { Options } from "@sluice/core"
import * as Schema from "effect/Schema"
import type * as LA from "../LimitAlgorithm.js"

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

import * as Check from "@sluice/kernel/options/Check"
import { describe, expect, it } from "vitest"

describe("Check", () => {
  it("ranges hold for what they say and nothing else", () => {
    const cases: Array<[Check.Range, ReadonlyArray<number>, ReadonlyArray<number>]> = [
      [Check.positive, [1e-9, 1, 1e300], [0, -1, Number.NaN, Infinity]],
      [Check.nonNegative, [0, 2.5], [-1e-9, Number.NaN, Infinity]],
      [Check.positiveInt, [1, 1024], [0, 1.5, -2, Number.NaN, Infinity]],
      [Check.positiveDuration, [0.001, 120_000], [0, -5, Infinity, Number.NaN]],
      [Check.ratio, [1e-6, 0.5, 1], [0, 1.01, Number.NaN]]
    ]
    for (const [range, good, bad] of cases) {
      for (const n of good) expect(range.holds(n), `${range.expected}: ${n}`).toBe(true)
      for (const n of bad) expect(range.holds(n), `${range.expected}: ${n}`).toBe(false)
    }
  })

  it("fields: one issue per value out of range, naming its path; absent values are skipped", () => {
    expect(
      Check.fields([
        ["capacity", 0, Check.positive],
        [["thresholds", "CRITICAL"], -1, Check.positive],
        ["buckets", undefined, Check.positiveInt],
        ["maxKeys", 10, Check.positiveInt]
      ])
    ).toEqual([
      { path: ["capacity"], message: "expected a positive finite number, got 0" },
      { path: ["thresholds", "CRITICAL"], message: "expected a positive finite number, got -1" }
    ])
    expect(
      Check.field(
        "k",
        2,
        Check.range("a number above 1", (n) => n > 1)
      )
    ).toBeUndefined()
  })

  it("orThrow throws a RangeError naming the first issue's field, and nothing without issues", () => {
    expect(() => Check.orThrow([])).not.toThrow()
    expect(() =>
      Check.orThrow([
        { path: ["thresholds", "CRITICAL"], message: "too low" },
        { path: ["capacity"], message: "not a number" }
      ])
    ).toThrow(new RangeError("thresholds.CRITICAL: too low"))
  })
})

import * as Rule from "@sluice/kernel/options/Rule"
import { describe, expect, it } from "vitest"

const accepts = (rule: Rule.Rule, values: ReadonlyArray<number>) => values.every((v) => rule.test(v))
const refuses = (rule: Rule.Rule, values: ReadonlyArray<number>) => values.every((v) => !rule.test(v))

describe("Field rules", () => {
  it("integers: positive and non-negative", () => {
    expect(accepts(Rule.positiveInt, [1, 2, 1e6])).toBe(true)
    expect(refuses(Rule.positiveInt, [0, -1, 1.5, NaN, Infinity])).toBe(true)
    expect(accepts(Rule.nonNegativeInt, [0, 1, 7])).toBe(true)
    expect(refuses(Rule.nonNegativeInt, [-1, 0.5, NaN, Infinity])).toBe(true)
    expect(Rule.positiveInt.message(0)).toBe("expected a positive integer, got 0")
    expect(Rule.nonNegativeInt.message(-1)).toBe("expected a non-negative integer, got -1")
  })

  it("numbers: ratios in [0, 1], positive and non-negative finite numbers", () => {
    expect(accepts(Rule.ratio, [0, 0.1, 1])).toBe(true)
    expect(refuses(Rule.ratio, [-0.1, 1.01, NaN, Infinity])).toBe(true)
    expect(accepts(Rule.positiveNumber, [1e-9, 3])).toBe(true)
    expect(refuses(Rule.positiveNumber, [0, -1, NaN, Infinity])).toBe(true)
    expect(accepts(Rule.nonNegativeNumber, [0, 2.5])).toBe(true)
    expect(refuses(Rule.nonNegativeNumber, [-1e-9, NaN, Infinity])).toBe(true)
    expect(Rule.ratio.message(2)).toBe("expected a ratio in [0, 1], got 2")
    expect(Rule.positiveNumber.message(NaN)).toBe("expected a positive finite number, got NaN")
    expect(Rule.nonNegativeNumber.message(-1)).toBe("expected a non-negative finite number, got -1")
  })

  it("durations in milliseconds: positive and finite, or finite", () => {
    expect(accepts(Rule.positiveDuration, [1e-6, 1, 86_400_000])).toBe(true)
    expect(refuses(Rule.positiveDuration, [0, Infinity])).toBe(true)
    expect(accepts(Rule.finiteDuration, [0, 5])).toBe(true)
    expect(refuses(Rule.finiteDuration, [Infinity])).toBe(true)
    expect(Rule.positiveDuration.message(0)).toBe("expected a positive, finite duration")
    expect(Rule.finiteDuration.message(Infinity)).toBe("expected a finite duration")
  })

  it("a duration as written: NaN and anything negative are mistakes, Infinity is a duration", () => {
    expect(Rule.durationInput(NaN)).toBe("expected a duration, got NaN")
    expect(Rule.durationInput(-Infinity)).toBe("expected a duration, got NaN")
    expect(Rule.durationInput(-1)).toBe("expected a non-negative duration, got -1")
    expect(Rule.durationInput(BigInt(-1))).toBe("expected a non-negative duration, got -1")
    expect(Rule.durationInput("  -5 seconds")).toBe("expected a non-negative duration, got   -5 seconds")
    for (const fine of [0, 5, Infinity, BigInt(0), "2 seconds", "x", null, {}]) {
      expect(Rule.durationInput(fine)).toBeUndefined()
    }
  })

  it("check: the message of the first rule a value fails", () => {
    const below100 = Rule.rule(
      (n) => n <= 100,
      () => "at most 100"
    )
    const field: Rule.Field = { type: "number", rules: [Rule.positiveInt, below100] }
    expect(Rule.check(field, 3)).toBeUndefined()
    expect(Rule.check(field, 0)).toBe("expected a positive integer, got 0")
    expect(Rule.check(field, 101)).toBe("at most 100")
    expect(Rule.check(field, 100.5)).toBe("expected a positive integer, got 100.5")
  })
})

import * as Field from "@sluice/kernel/options/Field"
import { describe, expect, it } from "vitest"

const accepts = (rule: Field.Rule, values: ReadonlyArray<number>) => values.every((v) => rule.test(v))
const refuses = (rule: Field.Rule, values: ReadonlyArray<number>) => values.every((v) => !rule.test(v))

describe("Field rules", () => {
  it("integers: positive and non-negative", () => {
    expect(accepts(Field.positiveInt, [1, 2, 1e6])).toBe(true)
    expect(refuses(Field.positiveInt, [0, -1, 1.5, NaN, Infinity])).toBe(true)
    expect(accepts(Field.nonNegativeInt, [0, 1, 7])).toBe(true)
    expect(refuses(Field.nonNegativeInt, [-1, 0.5, NaN, Infinity])).toBe(true)
    expect(Field.positiveInt.message(0)).toBe("expected a positive integer, got 0")
    expect(Field.nonNegativeInt.message(-1)).toBe("expected a non-negative integer, got -1")
  })

  it("numbers: ratios in [0, 1], positive and non-negative finite numbers", () => {
    expect(accepts(Field.ratio, [0, 0.1, 1])).toBe(true)
    expect(refuses(Field.ratio, [-0.1, 1.01, NaN, Infinity])).toBe(true)
    expect(accepts(Field.positiveNumber, [1e-9, 3])).toBe(true)
    expect(refuses(Field.positiveNumber, [0, -1, NaN, Infinity])).toBe(true)
    expect(accepts(Field.nonNegativeNumber, [0, 2.5])).toBe(true)
    expect(refuses(Field.nonNegativeNumber, [-1e-9, NaN, Infinity])).toBe(true)
    expect(Field.ratio.message(2)).toBe("expected a ratio in [0, 1], got 2")
    expect(Field.positiveNumber.message(NaN)).toBe("expected a positive finite number, got NaN")
    expect(Field.nonNegativeNumber.message(-1)).toBe("expected a non-negative finite number, got -1")
  })

  it("durations in milliseconds: positive and finite, or finite", () => {
    expect(accepts(Field.positiveDuration, [1e-6, 1, 86_400_000])).toBe(true)
    expect(refuses(Field.positiveDuration, [0, Infinity])).toBe(true)
    expect(accepts(Field.finiteDuration, [0, 5])).toBe(true)
    expect(refuses(Field.finiteDuration, [Infinity])).toBe(true)
    expect(Field.positiveDuration.message(0)).toBe("expected a positive, finite duration")
    expect(Field.finiteDuration.message(Infinity)).toBe("expected a finite duration")
  })

  it("a duration as written: NaN and anything negative are mistakes, Infinity is a duration", () => {
    expect(Field.durationInput(NaN)).toBe("expected a duration, got NaN")
    expect(Field.durationInput(-Infinity)).toBe("expected a duration, got NaN")
    expect(Field.durationInput(-1)).toBe("expected a non-negative duration, got -1")
    expect(Field.durationInput(BigInt(-1))).toBe("expected a non-negative duration, got -1")
    expect(Field.durationInput("  -5 seconds")).toBe("expected a non-negative duration, got   -5 seconds")
    for (const fine of [0, 5, Infinity, BigInt(0), "2 seconds", "x", null, {}]) {
      expect(Field.durationInput(fine)).toBeUndefined()
    }
  })

  it("check: the message of the first rule a value fails", () => {
    const below100 = Field.rule(
      (n) => n <= 100,
      () => "at most 100"
    )
    const field: Field.Field = { type: "number", rules: [Field.positiveInt, below100] }
    expect(Field.check(field, 3)).toBeUndefined()
    expect(Field.check(field, 0)).toBe("expected a positive integer, got 0")
    expect(Field.check(field, 101)).toBe("at most 100")
    expect(Field.check(field, 100.5)).toBe("expected a positive integer, got 100.5")
  })
})

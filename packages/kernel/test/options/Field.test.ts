import * as Field from "@sluice/kernel/options/Field"
import { describe, expect, it } from "vitest"

describe("Field checks", () => {
  it("each check accepts its range and names what it expected otherwise", () => {
    const cases: Array<[Field.Check, Array<unknown>, Array<unknown>]> = [
      [Field.positive, [1, 0.5, 1e9], [0, -1, Infinity, Number.NaN, "1"]],
      [Field.positiveOrInfinity, [1, Infinity], [0, -Infinity, Number.NaN]],
      [Field.positiveInt, [1, 20], [0, 1.5, -2, "3"]],
      [Field.nonNegativeInt, [0, 7], [-1, 0.5, Number.NaN, Infinity]],
      [Field.ratio, [0, 0.5, 1], [-0.1, 1.1, Number.NaN, Infinity]],
      [Field.positiveRatio, [0.125, 1], [0, 1.5]],
      [Field.openRatio, [0.5, 0.9], [0, 1, 2]],
      [Field.string, ["key", ""], [1, undefined]],
      [Field.oneOf("fifo", "lifo"), ["fifo", "lifo"], ["random", 1]],
      [Field.func("a function () => number"), [() => 1], [1, "f"]]
    ]
    for (const [check, good, bad] of cases) {
      for (const value of good) expect(check(value)).toBeUndefined()
      for (const value of bad) expect(check(value)).toMatch(/^expected /)
    }
    expect(Field.openRatio(2)).toBe("expected a ratio in (0, 1), got 2")
    expect(Field.oneOf("tahoe", "reno")("x")).toBe('expected "tahoe" or "reno", got "x"')
    expect(Field.func("a function () => boolean")(() => true)).toBeUndefined()
    expect(Field.positive(() => 1)).toBe("expected a positive finite number, got a function")
  })
})

describe("Field.resolve", () => {
  const spec = {
    limit: Field.required<() => number>(Field.func("a function () => number")),
    initial: Field.optional<number>(Field.positiveInt),
    maxQueue: Field.withDefault(Field.nonNegativeInt, 1000),
    order: Field.withDefault<"fifo" | "lifo">(Field.oneOf("fifo", "lifo"), "fifo")
  }
  const limit = () => 1

  it("fills in the defaults, keeps what is given, leaves out optional fields", () => {
    const result = Field.resolve(spec, { limit })
    expect(result).toEqual({ ok: true, value: { limit, maxQueue: 1000, order: "fifo" } })
    expect(result.ok && "initial" in result.value).toBe(false)
    expect(Field.resolve(spec, { limit, initial: 3, maxQueue: 0, order: undefined })).toEqual({
      ok: true,
      value: { limit, initial: 3, maxQueue: 0, order: "fifo" }
    })
  })

  it("refuses a key it does not declare, even one set to undefined, beside the other issues", () => {
    expect(Field.resolve(spec, { limit, factor: 0.9 })).toEqual({
      ok: false,
      issues: [{ path: ["factor"], message: "is not an option" }]
    })
    expect(Field.resolve(spec, { limit, other: undefined, maxQueue: -1 })).toEqual({
      ok: false,
      issues: [
        { path: ["other"], message: "is not an option" },
        { path: ["maxQueue"], message: "expected a non-negative integer, got -1" }
      ]
    })
    // A kernel constructor resolves its own fields of a larger configuration.
    expect(Field.resolveOrThrow(spec, { limit, other: 5 })).toEqual({ limit, maxQueue: 1000, order: "fifo" })
  })

  it("unknownKeys: an issue per own key not declared", () => {
    expect(Field.unknownKeys({ a: 1, b: undefined, c: 3 }, ["a"])).toEqual([
      { path: ["b"], message: "is not an option" },
      { path: ["c"], message: "is not an option" }
    ])
    expect(Field.unknownKeys({ a: 1 }, new Set(["a", "b"]))).toEqual([])
  })

  it("describe: one layout for every invalid-options message", () => {
    expect(
      Field.describe("Pool", [
        { path: ["size"], message: "expected a positive integer, got 0" },
        { path: ["thresholds", "CRITICAL"], message: "too low" }
      ])
    ).toBe("Pool: invalid options\nsize: expected a positive integer, got 0\nthresholds.CRITICAL: too low")
  })

  it("reports every field at fault, by name; a missing required field is one", () => {
    const result = Field.resolve(spec, { initial: 2.5, maxQueue: -1 })
    expect(result.ok).toBe(false)
    expect(!result.ok && result.issues).toEqual([
      { path: ["limit"], message: "is missing" },
      { path: ["initial"], message: "expected a positive integer, got 2.5" },
      { path: ["maxQueue"], message: "expected a non-negative integer, got -1" }
    ])
  })

  it("applies the rules across fields only once every field is acceptable", () => {
    const rules = (config: { readonly maxQueue: number }) =>
      config.maxQueue > 10 ? [{ path: ["maxQueue"], message: "too long" }] : []
    expect(Field.resolve(spec, { limit }, rules)).toEqual({
      ok: false,
      issues: [{ path: ["maxQueue"], message: "too long" }]
    })
    expect(Field.resolve(spec, { limit, maxQueue: 5 }, rules).ok).toBe(true)
    let called = false
    Field.resolve(spec, {}, () => ((called = true), []))
    expect(called).toBe(false)
  })

  it("map transforms a valid configuration and passes issues through", () => {
    expect(Field.map<number, number>({ ok: true, value: 2 }, (n) => n * 2)).toEqual({ ok: true, value: 4 })
    const failed: Field.Result<number> = { ok: false, issues: [{ path: ["n"], message: "bad" }] }
    expect(Field.map<number, number>(failed, (n) => n * 2)).toBe(failed)
  })

  it("orderIssues names the lower field of each pair out of order", () => {
    expect(
      Field.orderIssues([
        ["minLimit", 10],
        ["initial", 7],
        ["maxLimit", 5]
      ])
    ).toEqual([
      { path: ["minLimit"], message: "minLimit (10) must not exceed initial (7)" },
      { path: ["minLimit"], message: "minLimit (10) must not exceed maxLimit (5)" },
      { path: ["initial"], message: "initial (7) must not exceed maxLimit (5)" }
    ])
  })
})

describe("Field checks of plain values", () => {
  it("numeric checks hold for what they say and nothing else", () => {
    const cases: Array<[Field.Check, ReadonlyArray<number>, ReadonlyArray<number>]> = [
      [Field.positive, [1e-9, 1, 1e300], [0, -1, Number.NaN, Infinity]],
      [Field.nonNegative, [0, 2.5], [-1e-9, Number.NaN, Infinity]],
      [Field.positiveInt, [1, 1024], [0, 1.5, -2, Number.NaN, Infinity]],
      [Field.positiveDuration, [0.001, 120_000], [0, -5, Infinity, Number.NaN]],
      [Field.positiveRatio, [1e-6, 0.5, 1], [0, 1.01, Number.NaN]],
      [Field.finiteDuration, [0, 5], [-1, Infinity, Number.NaN]]
    ]
    for (const [check, good, bad] of cases) {
      for (const n of good) expect(check(n), `${n}`).toBeUndefined()
      for (const n of bad) expect(check(n), `${n}`).toMatch(/^expected /)
    }
  })

  it("say what they expected and what they got, or what the caller wrote (`shown`)", () => {
    expect(Field.positiveInt(0)).toBe("expected a positive integer, got 0")
    expect(Field.nonNegativeInt(-1)).toBe("expected a non-negative integer, got -1")
    expect(Field.ratio(2)).toBe("expected a ratio in [0, 1], got 2")
    expect(Field.positiveRatio(0)).toBe("expected a ratio in (0, 1], got 0")
    expect(Field.positive(Number.NaN)).toBe("expected a positive finite number, got NaN")
    expect(Field.nonNegative(-1)).toBe("expected a non-negative finite number, got -1")
    expect(Field.positiveDuration(0)).toBe("expected a positive, finite duration, got 0")
    expect(Field.finiteDuration(Infinity)).toBe("expected a finite duration, got Infinity")
    expect(Field.positiveDuration(Number.NaN, "soon")).toBe("expected a positive, finite duration, got soon")
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

  it("all: the problem of the first check a value fails", () => {
    const atMost100: Field.Check = (n) => ((n as number) <= 100 ? undefined : "at most 100")
    const check = Field.all(Field.positiveInt, atMost100)
    expect(check(3)).toBeUndefined()
    expect(check(0)).toBe("expected a positive integer, got 0")
    expect(check(101)).toBe("at most 100")
    expect(check(100.5)).toBe("expected a positive integer, got 100.5")
  })

  it("a field says whether it is required, optional or defaulted, and whether it is a duration", () => {
    expect(Field.required(Field.positiveInt)).toEqual({ check: Field.positiveInt })
    expect(Field.optional(Field.positiveInt).fallback).toEqual({ value: undefined })
    const window = Field.duration(Field.withDefault(Field.positiveDuration, 1000))
    expect(window).toEqual({ check: Field.positiveDuration, fallback: { value: 1000 }, duration: true })
    expect(Field.resolve({ window }, {})).toEqual({ ok: true, value: { window: 1000 } })
  })

  it("fields: one issue per value out of range, naming its path; absent values are skipped", () => {
    expect(
      Field.fields([
        ["capacity", 0, Field.positive],
        [["thresholds", "CRITICAL"], -1, Field.positive],
        ["buckets", undefined, Field.positiveInt],
        ["maxKeys", 10, Field.positiveInt]
      ])
    ).toEqual([
      { path: ["capacity"], message: "expected a positive finite number, got 0" },
      { path: ["thresholds", "CRITICAL"], message: "expected a positive finite number, got -1" }
    ])
    expect(
      Field.field(
        "k",
        2,
        Field.expecting((n) => n > 1, "a number above 1")
      )
    ).toBeUndefined()
  })

  it("orThrow throws a RangeError naming the first issue's field, and nothing without issues", () => {
    expect(() => Field.orThrow([])).not.toThrow()
    expect(() =>
      Field.orThrow([
        { path: ["thresholds", "CRITICAL"], message: "too low" },
        { path: ["capacity"], message: "not a number" }
      ])
    ).toThrow(new RangeError("thresholds.CRITICAL: too low"))
  })

  it("resolveOrThrow resolves with the defaults, or throws for the first issue under its path", () => {
    const spec = { n: Field.required<number>(Field.positiveInt), m: Field.withDefault(Field.positive, 2) }
    const atMostTen = (c: { n: number; m: number }) =>
      Field.orderIssues([
        ["n", c.n],
        ["ten", 10]
      ])
    expect(Field.resolveOrThrow(spec, { n: 3 })).toEqual({ n: 3, m: 2 })
    expect(() => Field.resolveOrThrow(spec, {})).toThrow(new RangeError("n: is missing"))
    expect(() => Field.resolveOrThrow(spec, { n: 1, m: 0 }, ["outer"])).toThrow(
      new RangeError("outer.m: expected a positive finite number, got 0")
    )
    expect(() => Field.resolveOrThrow(spec, { n: 11 }, [], atMostTen)).toThrow(
      new RangeError("n: n (11) must not exceed ten (10)")
    )
  })
})

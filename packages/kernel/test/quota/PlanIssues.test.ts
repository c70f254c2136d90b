import * as QuotaPlan from "@sluice/kernel/quota/QuotaPlan"
import { describe, expect, it } from "vitest"

const tier = (overrides: Partial<QuotaPlan.TierSpec> = {}): QuotaPlan.TierSpec => ({
  name: "spike",
  algorithm: "gcra",
  limit: 10,
  periodMs: 1000,
  ...overrides
})

const paths = (issues: ReadonlyArray<{ path: ReadonlyArray<string> }>) => issues.map((i) => i.path.join("."))

describe("plan validation", () => {
  it("a valid plan has no issues", () => {
    expect(
      QuotaPlan.issues({ tiers: [tier({ burst: 20 }), tier({ name: "count", algorithm: "sliding-window" })] })
    ).toEqual([])
    expect(QuotaPlan.issues({ tiers: [tier()], blockForMs: 1 })).toEqual([])
    // 1e9 per hour with a burst of 1e9 (3.6e15 < 2^52)
    expect(QuotaPlan.tierIssues(tier({ limit: 1e9, periodMs: 3_600_000, burst: 1e9 }))).toEqual([])
  })

  it("tier names: 1-64 characters without spaces or braces", () => {
    for (const name of ["", "a b", "{x}", "x\ty", "n".repeat(65)]) {
      expect(paths(QuotaPlan.tierIssues(tier({ name })))).toEqual(["name"])
    }
    expect(QuotaPlan.tierIssues(tier({ name: "n".repeat(64) }))).toEqual([])
  })

  it("limit and burst are positive integers", () => {
    for (const limit of [0, -3, 1.5, NaN])
      expect(paths(QuotaPlan.tierIssues(tier({ limit })))).toEqual(["limit"])
    expect(paths(QuotaPlan.tierIssues(tier({ burst: 0 })))).toEqual(["burst"])
  })

  it("periods are whole milliseconds of at least 1 ms; capacity × period at most 2^52", () => {
    for (const periodMs of [0, 0.25, 1.5, Infinity, NaN]) {
      const issues = QuotaPlan.tierIssues(tier({ periodMs }))
      expect(paths(issues)).toEqual(["period"])
      expect(issues[0]!.message).toMatch(/whole number of milliseconds/)
    }
    const huge = QuotaPlan.tierIssues(tier({ algorithm: "sliding-window", limit: 1e9, periodMs: 86_400_000 }))
    expect(paths(huge)).toEqual(["period"])
    expect(huge[0]!.message).toMatch(/2\^52/)
    // the burst counts when it is the larger
    expect(paths(QuotaPlan.tierIssues(tier({ limit: 1, burst: 2 ** 40, periodMs: 2 ** 13 })))).toEqual([
      "period"
    ])
  })

  it("plans: at least one tier, unique names, burst only on gcra, whole-ms blockFor; tier issues under tiers", () => {
    expect(QuotaPlan.issues({ tiers: [] })).toEqual([
      { path: ["tiers"], message: "expected at least one tier" }
    ])
    expect(QuotaPlan.issues({ tiers: [tier(), tier()] })).toEqual([
      { path: ["tiers"], message: 'duplicate tier name "spike"' }
    ])
    expect(QuotaPlan.issues({ tiers: [tier({ algorithm: "sliding-window", burst: 5 })] })).toEqual([
      { path: ["tiers"], message: "burst only applies to gcra tiers" }
    ])
    expect(paths(QuotaPlan.issues({ tiers: [tier()], blockForMs: 0.5 }))).toEqual(["blockFor"])
    expect(paths(QuotaPlan.issues({ tiers: [tier(), tier({ name: "b", limit: 0 })] }))).toEqual([
      "tiers.1.limit"
    ])
  })
})

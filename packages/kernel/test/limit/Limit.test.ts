import * as Limit from "@sluice/kernel/limit/Limit"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

describe("Limit bounds", () => {
  it("a default initial is 20, clamped into the user's bounds", () => {
    expect(Limit.resolveBounds({ minLimit: 1, maxLimit: 1000 }).initial).toBe(20)
    expect(Limit.resolveBounds({ minLimit: 1, maxLimit: 8 }).initial).toBe(8)
    expect(Limit.resolveBounds({ minLimit: 30, maxLimit: 40 }).initial).toBe(30)
    expect(Limit.resolveBounds({ initial: 7, minLimit: 1, maxLimit: 8 }).initial).toBe(7)
    expect(Limit.DEFAULT_INITIAL).toBe(20)
    expect(Limit.DEFAULT_MAX_LIMIT).toBe(1000)
  })

  it("an explicit initial outside the bounds is an issue naming it; a default one is not", () => {
    expect(Limit.boundsIssues({ initial: 50, minLimit: 1, maxLimit: 8 })).toEqual([
      { path: ["initial"], message: "initial (50) must not exceed maxLimit (8)" }
    ])
    expect(Limit.boundsIssues({ minLimit: 1, maxLimit: 8 })).toEqual([])
    expect(Limit.boundsIssues({ initial: 7, minLimit: 10, maxLimit: 5 }).map((i) => i.path[0])).toEqual([
      "minLimit",
      "minLimit",
      "initial"
    ])
    expect(Limit.boundsIssues({ minLimit: 10, maxLimit: Infinity })).toEqual([])
  })

  it("property: resolved bounds hold minLimit ≤ initial ≤ maxLimit exactly when there is no issue", () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 1, max: 100 }),
        (initial, minLimit, maxLimit) => {
          const issues = Limit.boundsIssues({ initial, minLimit, maxLimit })
          const resolved = Limit.resolveBounds({ initial, minLimit, maxLimit })
          const ordered = minLimit <= resolved.initial && resolved.initial <= maxLimit
          expect(issues.length === 0).toBe(ordered)
        }
      )
    )
  })
})

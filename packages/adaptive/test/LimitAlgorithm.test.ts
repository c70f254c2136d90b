import { LimitAlgorithm } from "@sluice/adaptive"
import { Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"

describe("LimitAlgorithm", () => {
  it("fixed never changes its limit", () => {
    const fixed = LimitAlgorithm.fixed(3)
    expect(fixed.limit).toBe(3)
    for (const outcome of ["success", "dropped", "ignored"] as const) {
      expect(fixed.onSample({ id: 0, nextId: 1, outcome, rtt: 1, inFlight: 3, now: 0 })).toBe(3)
    }
    expect(fixed.limit).toBe(3)
  })

  it("fixed rejects a limit that is not a positive integer, naming the field", () => {
    for (const bad of [0, -1, 2.5, Number.NaN]) {
      expect(() => LimitAlgorithm.fixed(bad)).toThrow(Options.InvalidOptions)
      expect(() => LimitAlgorithm.fixed(bad)).toThrow(/limit/)
    }
  })
})

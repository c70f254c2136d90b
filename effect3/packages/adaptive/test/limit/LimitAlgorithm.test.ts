import { LimitAlgorithm } from "@sluice/adaptive"
import { Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"

describe("LimitAlgorithm", () => {
  // The fixed limit's rule is tested in the kernel (limit/Fixed).
  it("fixed is a limit of `limit` that needs no clock, callable unbound", () => {
    const fixed = LimitAlgorithm.fixed(3)
    expect(fixed.limit).toBe(3)
    expect(fixed.name).toBe("fixed")
    expect(fixed.usesTime).toBe(false)
    const onSample = fixed.onSample
    expect(onSample({ id: 0, nextId: 1, outcome: "dropped", rtt: 1, inFlight: 3, now: 0 })).toBe(3)
  })

  it("fixed rejects a limit that is not a positive integer, naming the field", () => {
    for (const bad of [0, -1, 2.5, Number.NaN]) {
      expect(() => LimitAlgorithm.fixed(bad)).toThrow(Options.InvalidOptions)
      expect(() => LimitAlgorithm.fixed(bad)).toThrow(/limit/)
    }
  })
})

import * as Fixed from "@sluice/kernel/limit/Fixed"
import { describe, expect, it } from "vitest"

describe("Fixed", () => {
  it("never changes its limit, and needs no clock", () => {
    const fixed = new Fixed.Fixed(3)
    expect(fixed.limit).toBe(3)
    expect(fixed.name).toBe("fixed")
    expect(fixed.usesTime).toBe(false)
    for (const outcome of ["success", "dropped", "ignored"] as const) {
      expect(fixed.onSample({ id: 0, nextId: 1, outcome, rtt: 1, inFlight: 3, now: 0 })).toBe(3)
    }
    expect(fixed.limit).toBe(3)
  })
})

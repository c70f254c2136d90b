import * as Criticality from "@sluice/kernel/criticality/Criticality"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

describe("Criticality", () => {
  it("orders levels by importance", () => {
    const sorted = [...Criticality.levels].sort(Criticality.compare)
    expect(sorted).toEqual(["SHEDDABLE", "SHEDDABLE_PLUS", "CRITICAL", "CRITICAL_PLUS"])
    expect(Criticality.levels.map(Criticality.rank)).toEqual([3, 2, 1, 0])
    expect(Criticality.compare("CRITICAL", "CRITICAL")).toBe(0)
    expect(Criticality.defaultLevel).toBe("CRITICAL")
  })

  it("parses header values and never throws", () => {
    expect(Criticality.parse("CRITICAL_PLUS")).toBe("CRITICAL_PLUS")
    expect(Criticality.parse(" sheddable-plus ")).toBe("SHEDDABLE_PLUS")
    expect(Criticality.parse("__proto__")).toBe("CRITICAL")
    expect(Criticality.parse("constructor")).toBe("CRITICAL")
    expect(Criticality.parse(undefined)).toBe("CRITICAL")
    expect(Criticality.parse(null, "SHEDDABLE")).toBe("SHEDDABLE")
    expect(Criticality.parse("", "SHEDDABLE")).toBe("SHEDDABLE")
    expect(Criticality.parse("x".repeat(10_000), "SHEDDABLE")).toBe("SHEDDABLE")
    fc.assert(
      fc.property(fc.string({ maxLength: 64 }), (s) => Criticality.levels.includes(Criticality.parse(s)))
    )
  })

  it("clamps to a ceiling", () => {
    expect(Criticality.clamp("CRITICAL_PLUS", "CRITICAL")).toBe("CRITICAL")
    expect(Criticality.clamp("SHEDDABLE_PLUS", "SHEDDABLE")).toBe("SHEDDABLE")
    expect(Criticality.clamp("SHEDDABLE", "CRITICAL")).toBe("SHEDDABLE")
    expect(Criticality.isAtLeast("CRITICAL", "SHEDDABLE")).toBe(true)
    expect(Criticality.isAtLeast("SHEDDABLE", "CRITICAL")).toBe(false)
    fc.assert(
      fc.property(
        fc.constantFrom(...Criticality.levels),
        fc.constantFrom(...Criticality.levels),
        (level, ceiling) => {
          const clamped = Criticality.clamp(level, ceiling)
          return Criticality.isAtLeast(ceiling, clamped) && (clamped === level || clamped === ceiling)
        }
      )
    )
  })
})

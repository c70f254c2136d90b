import { Criticality } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as fc from "fast-check"

describe("Criticality", () => {
  it.effect("defaults to CRITICAL and follows forks", () =>
    Effect.gen(function* () {
      expect(yield* Criticality.current).toBe("CRITICAL")
      const inner = yield* Effect.forkChild(Criticality.current).pipe(
        Effect.flatMap(Fiber.await),
        Criticality.withCriticality("SHEDDABLE")
      )
      expect(inner._tag).toBe("Success")
      expect((inner as any).value).toBe("SHEDDABLE")
      expect(yield* Criticality.current).toBe("CRITICAL")
    })
  )

  it("orders levels by importance", () => {
    const sorted = [...Criticality.levels].sort(Criticality.Order)
    expect(sorted).toEqual(["SHEDDABLE", "SHEDDABLE_PLUS", "CRITICAL", "CRITICAL_PLUS"])
  })

  it("parses header values and never throws", () => {
    expect(Criticality.parse("CRITICAL_PLUS")).toBe("CRITICAL_PLUS")
    expect(Criticality.parse(" sheddable-plus ")).toBe("SHEDDABLE_PLUS")
    expect(Criticality.parse("__proto__")).toBe("CRITICAL")
    expect(Criticality.parse("constructor")).toBe("CRITICAL")
    expect(Criticality.parse(undefined)).toBe("CRITICAL")
    expect(Criticality.parse("x".repeat(10_000), "SHEDDABLE")).toBe("SHEDDABLE")
    fc.assert(
      fc.property(fc.string({ maxLength: 64 }), (s) => Criticality.levels.includes(Criticality.parse(s)))
    )
  })

  it("clamps to a ceiling", () => {
    expect(Criticality.clamp("CRITICAL_PLUS", "CRITICAL")).toBe("CRITICAL")
    expect(Criticality.clamp("SHEDDABLE")("SHEDDABLE_PLUS")).toBe("SHEDDABLE")
    expect(Criticality.clamp("SHEDDABLE", "CRITICAL")).toBe("SHEDDABLE")
    expect(Criticality.isAtLeast("CRITICAL", "SHEDDABLE")).toBe(true)
  })
})

import * as Criticality from "@sluice/kernel/criticality/Criticality"
import * as Trust from "@sluice/kernel/wire/Trust"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

describe("Trust", () => {
  it("policies that throw or answer anything but true trust nobody; all and any of none trust nobody", () => {
    const throwing: Trust.Policy<unknown> = () => {
      throw new Error("no")
    }
    expect(Trust.evaluate(Trust.none, {})).toBe(false)
    expect(Trust.evaluate(Trust.everyone, {})).toBe(true)
    expect(Trust.evaluate(throwing, {})).toBe(false)
    expect(Trust.evaluate((() => 1) as never, {})).toBe(false)
    expect(Trust.evaluate(Trust.all(), {})).toBe(false)
    expect(Trust.evaluate(Trust.any(), {})).toBe(false)
    expect(Trust.evaluate(Trust.all(Trust.everyone, throwing), {})).toBe(false)
    expect(Trust.evaluate(Trust.all(Trust.everyone, Trust.everyone), {})).toBe(true)
    expect(Trust.evaluate(Trust.any(throwing, Trust.everyone), {})).toBe(true)
    const byName =
      (name: string): Trust.Policy<{ readonly name: string }> =>
      (r) =>
        r.name === name
    expect(Trust.any(byName("a"), byName("b"))({ name: "b" })).toBe(true)
    expect(Trust.all(byName("a"), byName("b"))({ name: "b" })).toBe(false)
  })

  it("loopback addresses", () => {
    for (const a of [
      "127.0.0.1",
      "127.1.2.3",
      "::1",
      "0:0:0:0:0:0:0:1",
      "::ffff:127.0.0.1",
      "::FFFF:127.0.0.9"
    ])
      expect(Trust.isLoopbackAddress(a)).toBe(true)
    for (const a of ["10.0.0.1", "::ffff:10.0.0.1", "1127.0.0.1", "fe80::1", "127.0.0.1.evil", "127.0.0", ""])
      expect(Trust.isLoopbackAddress(a)).toBe(false)
  })

  it("a trusted caller's level is its claim; anybody else's at most the ceiling, a missing claim too", () => {
    expect(Trust.level("CRITICAL_PLUS", true, "CRITICAL", "CRITICAL")).toBe("CRITICAL_PLUS")
    expect(Trust.level("CRITICAL_PLUS", false, "CRITICAL", "CRITICAL")).toBe("CRITICAL")
    expect(Trust.level("SHEDDABLE", false, "CRITICAL", "CRITICAL")).toBe("SHEDDABLE")
    expect(Trust.level("nonsense", false, "SHEDDABLE_PLUS", "CRITICAL")).toBe("SHEDDABLE_PLUS")
    // the default may exceed the ceiling only for trusted callers
    expect(Trust.level(undefined, true, "CRITICAL", "CRITICAL_PLUS")).toBe("CRITICAL_PLUS")
    expect(Trust.level(undefined, false, "CRITICAL", "CRITICAL_PLUS")).toBe("CRITICAL")
    expect(Trust.level(undefined, false, "CRITICAL", "SHEDDABLE")).toBe("SHEDDABLE")
    fc.assert(
      fc.property(
        fc.option(fc.oneof(fc.constantFrom(...Criticality.levels), fc.string()), { nil: undefined }),
        fc.constantFrom(...Criticality.levels),
        fc.constantFrom(...Criticality.levels),
        (header, ceiling, fallback) => {
          expect(Criticality.isAtLeast(ceiling, Trust.level(header, false, ceiling, fallback))).toBe(true)
        }
      )
    )
  })

  it("shared secrets: long enough, in a lower-case token header, presented as one short value", () => {
    expect(Trust.MIN_SECRET_LENGTH).toBe(16)
    expect(Trust.DEFAULT_SECRET_HEADER).toBe("x-sluice-trust")
    expect(Trust.isHeaderName("x-sluice-trust")).toBe(true)
    for (const name of ["X-Trust", "x trust", "", "x:trust"]) expect(Trust.isHeaderName(name)).toBe(false)
    expect(Trust.presentedSecret("s3cret")).toBe("s3cret")
    for (const raw of ["", "x".repeat(1025), ["s3cret"], undefined, 7])
      expect(Trust.presentedSecret(raw)).toBeUndefined()
  })
})

import * as Headers from "@sluice/kernel/wire/Headers"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

describe("Headers", () => {
  it("parses attempts, clamping hostile values", () => {
    expect(Headers.parseAttempt("0")).toBe(0)
    expect(Headers.parseAttempt(" 2 ")).toBe(2)
    expect(Headers.parseAttempt("-1")).toBe(0)
    expect(Headers.parseAttempt("1.5")).toBe(0)
    expect(Headers.parseAttempt("1e3")).toBe(0)
    expect(Headers.parseAttempt("99999999999999")).toBe(1000)
    expect(Headers.parseAttempt("9999999999999999999")).toBe(0) // longer than 16 chars: ignored
    expect(Headers.parseAttempt("7", 5)).toBe(5)
    expect(Headers.parseAttempt(undefined)).toBe(0)
    expect(Headers.parseAttempt("")).toBe(0)
  })

  it("parses flags", () => {
    expect(Headers.parseFlag("1")).toBe(true)
    expect(Headers.parseFlag("TRUE")).toBe(true)
    expect(Headers.parseFlag(" yes ")).toBe(true)
    expect(Headers.parseFlag("0")).toBe(false)
    expect(Headers.parseFlag("11")).toBe(false)
    expect(Headers.parseFlag(undefined)).toBe(false)
  })

  it("reads one value of a header: the first of a repeated one", () => {
    expect(Headers.headerValue("a")).toBe("a")
    expect(Headers.headerValue(["a", "b"])).toBe("a")
    expect(Headers.headerValue([])).toBeUndefined()
    expect(Headers.headerValue(null)).toBeUndefined()
    expect(Headers.headerValue(undefined)).toBeUndefined()
  })

  it("the default names are lower case", () => {
    for (const name of Object.values(Headers.defaultHeaderNames)) expect(name).toBe(name.toLowerCase())
    expect(Headers.defaultHeaderNames.attempt).toBe("x-sluice-attempt")
  })

  it("never throws on arbitrary input; an attempt is always in [0, max]", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.integer({ min: 0, max: 10_000 }), (s, max) => {
        const attempt = Headers.parseAttempt(s)
        expect(attempt).toBeGreaterThanOrEqual(0)
        expect(attempt).toBeLessThanOrEqual(1000)
        const bounded = Headers.parseAttempt(s, max)
        expect(bounded).toBeGreaterThanOrEqual(0)
        expect(bounded).toBeLessThanOrEqual(max)
        expect(typeof Headers.parseFlag(s)).toBe("boolean")
      })
    )
  })
})

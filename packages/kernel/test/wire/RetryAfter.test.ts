import * as RetryAfter from "@sluice/kernel/wire/RetryAfter"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

describe("RetryAfter", () => {
  it("parses delay-seconds, clamped", () => {
    expect(RetryAfter.parseMillis("3", 0)).toBe(3000)
    // delay-seconds = 1*DIGIT: no fraction, no sign, no exponent, no inner space
    for (const bad of ["0.25", "1.5", "+5", "-5", "1e3", "0x10", "1 0", "５"])
      expect(RetryAfter.parseMillis(bad, 0)).toBeUndefined()
    expect(RetryAfter.parseMillis("007", 0)).toBe(7000)
    expect(RetryAfter.parseMillis("0", 0)).toBe(0)
    expect(RetryAfter.parseMillis("999999999999999999999", 0, 10_000)).toBe(10_000)
    expect(RetryAfter.parseMillis("9".repeat(255), 0)).toBe(RetryAfter.DEFAULT_MAX_MILLIS)
    expect(RetryAfter.parseMillis("-5", 0)).toBeUndefined()
    expect(RetryAfter.parseMillis("soon", 0)).toBeUndefined()
    expect(RetryAfter.parseMillis("", 0)).toBeUndefined()
    expect(RetryAfter.parseMillis(null, 0)).toBeUndefined()
    expect(RetryAfter.parseMillis("1".repeat(1000), 0)).toBeUndefined()
  })

  it("parses an HTTP date in all three forms, relative to now", () => {
    const now = Date.UTC(2015, 9, 21, 7, 28, 0)
    expect(RetryAfter.parseMillis("Wed, 21 Oct 2015 07:28:05 GMT", now)).toBe(5000)
    expect(RetryAfter.parseMillis("Wednesday, 21-Oct-15 07:28:07 GMT", now)).toBe(7000)
    expect(RetryAfter.parseMillis("Wed Oct 21 07:28:09 2015", now)).toBe(9000)
    // a date in the past means "now"
    expect(RetryAfter.parseMillis("Wed, 21 Oct 2015 07:00:00 GMT", now)).toBe(0)
    // far future: clamped
    expect(RetryAfter.parseMillis("Fri, 31 Dec 9999 23:59:59 GMT", now, 60_000)).toBe(60_000)
    expect(RetryAfter.parseMillis("Wed, 41 Oct 2015 07:28:05 GMT", now)).toBeUndefined()
    expect(RetryAfter.parseMillis("Wed, 21 Foo 2015 07:28:05 GMT", now)).toBeUndefined()
    // a date needs a now to be read against
    expect(RetryAfter.parseMillis("Wed, 21 Oct 2015 07:28:05 GMT", NaN)).toBeUndefined()
    // so a two-digit year in the far future is clamped, not "now"
    const later = Date.UTC(2026, 10, 23, 20, 0, 0)
    expect(RetryAfter.parseMillis("Thursday, 01-Jan-70 00:00:00 GMT", later, 60_000)).toBe(60_000)
  })

  it("formats delay-seconds, rounded up, at most a day", () => {
    expect(RetryAfter.format(1500)).toBe("2")
    expect(RetryAfter.format(1)).toBe("1")
    expect(RetryAfter.format(0)).toBe("0")
    expect(RetryAfter.format(-5)).toBe("0")
    expect(RetryAfter.format(NaN)).toBe("0")
    expect(RetryAfter.format(Infinity)).toBe("86400")
    expect(RetryAfter.format(3 * 24 * 60 * 60 * 1000)).toBe("86400")
  })

  it("never throws; a parsed delay is always in [0, max]", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.integer(), (s, now) => {
        const millis = RetryAfter.parseMillis(s, now, 5000)
        if (millis !== undefined) {
          expect(millis).toBeGreaterThanOrEqual(0)
          expect(millis).toBeLessThanOrEqual(5000)
        }
      })
    )
  })

  it("what is written reads back as the same whole seconds", () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e12, noNaN: true }), (millis) => {
        const seconds = Number(RetryAfter.format(millis))
        expect(RetryAfter.parseMillis(RetryAfter.format(millis), 0)).toBe(seconds * 1000)
        // rounded up, and a positive delay (a denormal one too) is at least a second
        expect(seconds).toBe(
          millis >= 86_400_000 ? 86_400 : millis > 0 ? Math.max(1, Math.ceil(millis / 1000)) : 0
        )
      })
    )
  })
})

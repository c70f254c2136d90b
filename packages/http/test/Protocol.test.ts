import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import fc from "fast-check"
import { Protocol } from "@sluice/http"

describe("Protocol", () => {
  it("parses attempts, clamping hostile values", () => {
    expect(Protocol.parseAttempt("0")).toBe(0)
    expect(Protocol.parseAttempt(" 2 ")).toBe(2)
    expect(Protocol.parseAttempt("-1")).toBe(0)
    expect(Protocol.parseAttempt("1.5")).toBe(0)
    expect(Protocol.parseAttempt("1e3")).toBe(0)
    expect(Protocol.parseAttempt("99999999999999")).toBe(1000)
    expect(Protocol.parseAttempt("9999999999999999999")).toBe(0) // longer than 16 chars: ignored
    expect(Protocol.parseAttempt("7", 5)).toBe(5)
    expect(Protocol.parseAttempt(undefined)).toBe(0)
    expect(Protocol.parseAttempt("")).toBe(0)
  })

  it("parses flags", () => {
    expect(Protocol.parseFlag("1")).toBe(true)
    expect(Protocol.parseFlag("TRUE")).toBe(true)
    expect(Protocol.parseFlag("0")).toBe(false)
    expect(Protocol.parseFlag("11")).toBe(false)
    expect(Protocol.parseFlag(undefined)).toBe(false)
  })

  it("parses criticality through core", () => {
    expect(Protocol.parseCriticality("sheddable-plus")).toBe("SHEDDABLE_PLUS")
    expect(Protocol.parseCriticality("root")).toBe("CRITICAL")
    expect(Protocol.parseCriticality("nope", "SHEDDABLE")).toBe("SHEDDABLE")
  })

  it("parses Retry-After as seconds, clamped", () => {
    expect(Protocol.parseRetryAfterAt("3", 0)).toEqual(Option.some(Duration.millis(3000)))
    // delay-seconds = 1*DIGIT: no fraction, no sign, no exponent, no inner space
    for (const bad of ["0.25", "1.5", "+5", "-5", "1e3", "0x10", "1 0", "５"])
      expect(Protocol.parseRetryAfterAt(bad, 0)).toEqual(Option.none())
    expect(Protocol.parseRetryAfterAt("007", 0)).toEqual(Option.some(Duration.millis(7000)))
    expect(Protocol.parseRetryAfterAt("0", 0)).toEqual(Option.some(Duration.zero))
    expect(Protocol.parseRetryAfterAt("999999999999999999999", 0, "10 seconds")).toEqual(
      Option.some(Duration.millis(10_000))
    )
    expect(Protocol.parseRetryAfterAt("-5", 0)).toEqual(Option.none())
    expect(Protocol.parseRetryAfterAt("soon", 0)).toEqual(Option.none())
    expect(Protocol.parseRetryAfterAt("", 0)).toEqual(Option.none())
    expect(Protocol.parseRetryAfterAt("1".repeat(1000), 0)).toEqual(Option.none())
  })

  it("parses Retry-After as an HTTP date in all three forms", () => {
    const now = Date.UTC(2015, 9, 21, 7, 28, 0)
    expect(Protocol.parseRetryAfterAt("Wed, 21 Oct 2015 07:28:05 GMT", now)).toEqual(
      Option.some(Duration.millis(5000))
    )
    expect(Protocol.parseRetryAfterAt("Wednesday, 21-Oct-15 07:28:07 GMT", now)).toEqual(
      Option.some(Duration.millis(7000))
    )
    expect(Protocol.parseRetryAfterAt("Wed Oct 21 07:28:09 2015", now)).toEqual(
      Option.some(Duration.millis(9000))
    )
    // a date in the past means "now"
    expect(Protocol.parseRetryAfterAt("Wed, 21 Oct 2015 07:00:00 GMT", now)).toEqual(
      Option.some(Duration.zero)
    )
    // far future: clamped
    expect(Protocol.parseRetryAfterAt("Fri, 31 Dec 9999 23:59:59 GMT", now, "1 minute")).toEqual(
      Option.some(Duration.minutes(1))
    )
    expect(Protocol.parseRetryAfterAt("Wed, 41 Oct 2015 07:28:05 GMT", now)).toEqual(Option.none())
    expect(Protocol.parseRetryAfterAt("Wed, 21 Foo 2015 07:28:05 GMT", now)).toEqual(Option.none())
    // a two-digit year in the far future (2070, on 2026-11-23) is clamped, not "now"
    expect(
      Protocol.parseRetryAfterAt(
        "Thursday, 01-Jan-70 00:00:00 GMT",
        Date.UTC(2026, 10, 23, 20, 0, 0),
        "1 minute"
      )
    ).toEqual(Option.some(Duration.minutes(1)))
    // the spec's own example of an HTTP date, through the binding
    expect(Protocol.parseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT")).toBe(Date.UTC(1994, 10, 6, 8, 49, 37))
  })

  it.effect("reads now from the Clock", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(Date.UTC(2015, 9, 21, 7, 28, 0))
      const d = yield* Protocol.parseRetryAfter("Wed, 21 Oct 2015 07:28:30 GMT")
      expect(d).toEqual(Option.some(Duration.seconds(30)))
    })
  )

  it("formats Retry-After in whole seconds, rounded up", () => {
    expect(Protocol.formatRetryAfter(Duration.millis(1500))).toBe("2")
    expect(Protocol.formatRetryAfter(Duration.millis(1))).toBe("1")
    expect(Protocol.formatRetryAfter(Duration.zero)).toBe("0")
    expect(Protocol.formatRetryAfter(Duration.infinity)).toBe("86400")
    expect(Protocol.formatRetryAfter(Duration.days(3))).toBe("86400")
  })

  it("formats and parses the IETF rate-limit headers", () => {
    const tiers = [
      { name: "spike", limit: 20, window: Duration.seconds(1), remaining: 0, reset: Duration.millis(300) },
      { name: "count", limit: 5000, window: Duration.hours(1), remaining: 4990, reset: Duration.minutes(59) }
    ]
    const policy = Protocol.formatRateLimitPolicy(tiers)
    const limit = Protocol.formatRateLimit(tiers)
    expect(policy).toBe(`"spike";q=20;w=1, "count";q=5000;w=3600`)
    expect(limit).toBe(`"spike";r=0;t=1, "count";r=4990;t=3540`)
    expect(Protocol.parseRateLimit(policy)).toEqual([
      { name: "spike", params: { q: 20, w: 1 } },
      { name: "count", params: { q: 5000, w: 3600 } }
    ])
    expect(Protocol.parseRateLimit(limit)[1]).toEqual({ name: "count", params: { r: 4990, t: 3540 } })
    // hostile names are sanitised into a valid sf-string
    const odd = Protocol.formatRateLimit([{ name: 'a"b\\c,d\u00e9', limit: 1, remaining: -3 }])
    expect(odd).toBe(`"a\\"b\\\\cd";r=0`)
    expect(Protocol.parseRateLimit(odd)).toEqual([{ name: 'a"b\\cd', params: { r: 0 } }])
  })

  it("never throws on arbitrary input", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.integer(), (s, now) => {
        const attempt = Protocol.parseAttempt(s)
        expect(attempt).toBeGreaterThanOrEqual(0)
        expect(attempt).toBeLessThanOrEqual(1000)
        Protocol.parseFlag(s)
        Protocol.parseRateLimit(s)
        const ra = Protocol.parseRetryAfterAt(s, now, "5 seconds")
        if (Option.isSome(ra)) {
          expect(Duration.toMillis(ra.value)).toBeGreaterThanOrEqual(0)
          expect(Duration.toMillis(ra.value)).toBeLessThanOrEqual(5000)
        }
      })
    )
  })

  it("renames headers", () => {
    const settings = Protocol.make({ headers: { criticality: "X-Acme-Criticality" } })
    expect(settings.headers.criticality).toBe("x-acme-criticality")
    expect(settings.headers.attempt).toBe("x-sluice-attempt")
  })
})

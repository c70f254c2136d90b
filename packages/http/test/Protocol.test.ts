import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, FastCheck as fc, Option, TestClock } from "effect"
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
  })

  // RFC 9110 §5.6.7, written from the text: the three forms of one instant, the
  // grammar's exact spelling, and the two-digit-year rule of rfc850-date.
  const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
  const DAYS_L = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
  const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
  const two = (n: number) => String(n).padStart(2, "0")
  const forms = (t: number) => {
    const d = new Date(t)
    const time = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`
    const [day, month, year, date] = [
      d.getUTCDay(),
      MONTHS[d.getUTCMonth()],
      d.getUTCFullYear(),
      d.getUTCDate()
    ]
    return {
      imf: `${DAYS[day]}, ${two(date)} ${month} ${String(year).padStart(4, "0")} ${time} GMT`,
      rfc850: `${DAYS_L[day]}, ${two(date)}-${month}-${two(year % 100)} ${time} GMT`,
      asctime: `${DAYS[day]} ${month} ${date < 10 ? " " + date : date} ${time} ${String(year).padStart(4, "0")}`
    }
  }
  // "MUST interpret a timestamp that appears to be more than 50 years in the future as
  // representing the most recent year in the past that had the same last two digits":
  // among all years with those digits, the latest whose instant is not more than 50
  // years after now (searched by brute force over four centuries).
  const rfc850Reference = (t: number, now: number): number => {
    const d = new Date(t)
    const limit = new Date(now)
    limit.setUTCFullYear(limit.getUTCFullYear() + 50)
    let best = NaN
    for (let y = new Date(now).getUTCFullYear() - 200; y <= new Date(now).getUTCFullYear() + 200; y++) {
      if (y % 100 !== d.getUTCFullYear() % 100) continue
      const c = new Date(t)
      c.setUTCFullYear(y)
      if (c.getUTCDate() !== d.getUTCDate()) continue // 29 Feb in a year without one
      if (c.getTime() <= limit.getTime()) best = c.getTime()
    }
    return best
  }

  it("HTTP dates per RFC 9110 §5.6.7: the spec's own examples, exact spelling, two-digit years", () => {
    const t = Date.UTC(1994, 10, 6, 8, 49, 37)
    const now = Date.UTC(2026, 10, 23, 20, 0, 0)
    expect(Protocol.parseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT")).toBe(t)
    expect(Protocol.parseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT", now)).toBe(t)
    expect(Protocol.parseHttpDate("Sun Nov  6 08:49:37 1994")).toBe(t)
    for (const bad of [
      "sun, 06 Nov 1994 08:49:37 GMT", // case-sensitive
      "Sun, 06 nov 1994 08:49:37 GMT",
      "Sun, 06 Nov 1994 08:49:37 gmt",
      "Sun, 6 Nov 1994 08:49:37 GMT", // day = 2DIGIT
      "Sun,  06 Nov 1994 08:49:37 GMT",
      "Sun, 06 Nov 94 08:49:37 GMT",
      "Sun, 31 Feb 1994 08:49:37 GMT", // no such day
      "Sun, 06 Nov 1994 24:00:00 GMT",
      "Sun, 06 Nov 1994 08:60:00 GMT",
      "Sun, 06 Nov 1994 08:49:37 UTC",
      "Sun, 06 Nov 1994 08:49:37 +0000",
      "Sunday, 06-Nov-1994 08:49:37 GMT",
      "Sun, 06-Nov-94 08:49:37 GMT", // rfc850 uses day-name-l
      "Sun Nov 6 08:49:37 1994", // asctime: SP DIGIT
      "Sun Nov 06 08:49:37 1994 GMT",
      "Funday, 06-Nov-94 08:49:37 GMT"
    ])
      expect([bad, Protocol.parseHttpDate(bad, now)]).toEqual([bad, undefined])
    // a leap second is allowed
    expect(Protocol.parseHttpDate("Sat, 31 Dec 2016 23:59:60 GMT")).toBe(Date.UTC(2017, 0, 1))
    // two-digit years, on 2026-11-23: 70 and 76 are not in the past (2070, 2076 are
    // not more than 50 years ahead); 77 is (2077-03 is more than 50 years ahead → 1977)
    const year = (v: string) => new Date(Protocol.parseHttpDate(v, now)!).getUTCFullYear()
    expect(year("Thursday, 01-Jan-70 00:00:00 GMT")).toBe(2070)
    expect(year("Saturday, 01-Feb-76 00:00:00 GMT")).toBe(2076)
    expect(year("Tuesday, 01-Dec-76 00:00:00 GMT")).toBe(1976) // 2076-12-01 is past now + 50 y
    expect(year("Monday, 01-Mar-77 00:00:00 GMT")).toBe(1977)
    expect(year("Friday, 01-Jan-99 00:00:00 GMT")).toBe(1999)
    expect(year("Saturday, 01-Jan-00 00:00:00 GMT")).toBe(2000)
    expect(year("Wednesday, 01-Jan-25 00:00:00 GMT")).toBe(2025)
    // so a Retry-After of that form in the far future is clamped, not "now"
    expect(Protocol.parseRetryAfterAt("Thursday, 01-Jan-70 00:00:00 GMT", now, "1 minute")).toEqual(
      Option.some(Duration.minutes(1))
    )
  })

  it("HTTP dates: the three forms of random instants agree with the spec reference", () => {
    fc.assert(
      fc.property(
        fc
          .date({
            min: new Date(Date.UTC(1900, 0, 1)),
            max: new Date(Date.UTC(2199, 11, 31)),
            noInvalidDate: true
          })
          .map((d) => d.getTime() - (((d.getTime() % 1000) + 1000) % 1000)),
        fc
          .date({
            min: new Date(Date.UTC(1970, 0, 1)),
            max: new Date(Date.UTC(2100, 0, 1)),
            noInvalidDate: true
          })
          .map((d) => d.getTime()),
        (t, now) => {
          const f = forms(t)
          expect(Protocol.parseHttpDate(f.imf, now)).toBe(t)
          expect(Protocol.parseHttpDate(f.asctime, now)).toBe(t)
          const expected = rfc850Reference(t, now)
          // the weekday of the written form names the original instant; the grammar does
          // not ask a recipient to check it, so only the resolved instant is compared
          expect(Protocol.parseHttpDate(f.rfc850, now)).toBe(Number.isNaN(expected) ? undefined : expected)
        }
      ),
      { numRuns: 3000 }
    )
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

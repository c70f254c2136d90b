import * as HttpDate from "@sluice/kernel/wire/HttpDate"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

describe("HttpDate", () => {
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
    expect(HttpDate.parse("Sun, 06 Nov 1994 08:49:37 GMT")).toBe(t)
    expect(HttpDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now)).toBe(t)
    expect(HttpDate.parse("Sun Nov  6 08:49:37 1994")).toBe(t)
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
      expect([bad, HttpDate.parse(bad, now)]).toEqual([bad, undefined])
    // a leap second is allowed
    expect(HttpDate.parse("Sat, 31 Dec 2016 23:59:60 GMT")).toBe(Date.UTC(2017, 0, 1))
    // two-digit years, on 2026-11-23: 70 and 76 are not in the past (2070, 2076 are
    // not more than 50 years ahead); 77 is (2077-03 is more than 50 years ahead → 1977)
    const year = (v: string) => new Date(HttpDate.parse(v, now)!).getUTCFullYear()
    expect(year("Thursday, 01-Jan-70 00:00:00 GMT")).toBe(2070)
    expect(year("Saturday, 01-Feb-76 00:00:00 GMT")).toBe(2076)
    expect(year("Tuesday, 01-Dec-76 00:00:00 GMT")).toBe(1976) // 2076-12-01 is past now + 50 y
    expect(year("Monday, 01-Mar-77 00:00:00 GMT")).toBe(1977)
    expect(year("Friday, 01-Jan-99 00:00:00 GMT")).toBe(1999)
    expect(year("Saturday, 01-Jan-00 00:00:00 GMT")).toBe(2000)
    expect(year("Wednesday, 01-Jan-25 00:00:00 GMT")).toBe(2025)
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
          expect(HttpDate.parse(f.imf, now)).toBe(t)
          expect(HttpDate.parse(f.asctime, now)).toBe(t)
          const expected = rfc850Reference(t, now)
          // the weekday of the written form names the original instant; the grammar does
          // not ask a recipient to check it, so only the resolved instant is compared
          expect(HttpDate.parse(f.rfc850, now)).toBe(Number.isNaN(expected) ? undefined : expected)
        }
      ),
      { numRuns: 3000 }
    )
  })
})

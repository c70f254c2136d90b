/**
 * HTTP dates (RFC 9110 §5.6.7): the IMF-fixdate form every sender must use, and the
 * obsolete rfc850-date and asctime-date forms every recipient must still accept.
 * Exactly the grammar: names are case-sensitive, single spaces, a day that exists in
 * its month, second 60 for a leap second. `Retry-After` may carry one.
 *
 * The rfc850-date form has a two-digit year; the RFC says how to read it relative to
 * "now", which is a parameter here like every time in the kernel.
 *
 * @since 0.2.0
 */

const MONTHS: Readonly<Record<string, number>> = {
  Jan: 0,
  Feb: 1,
  Mar: 2,
  Apr: 3,
  May: 4,
  Jun: 5,
  Jul: 6,
  Aug: 7,
  Sep: 8,
  Oct: 9,
  Nov: 10,
  Dec: 11
}
const DAY = "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
const DAY_L = "(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
const MONTH = "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
const TIME = "(\\d{2}):(\\d{2}):(\\d{2})"
// IMF-fixdate = day-name "," SP date1 SP time-of-day SP GMT; date1 = day SP month SP year
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`)
// rfc850-date = day-name-l "," SP date2 SP time-of-day SP GMT; date2 = day "-" month "-" 2DIGIT
const RFC850 = new RegExp(`^${DAY_L}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`)
// asctime-date = day-name SP date3 SP time-of-day SP year; date3 = month SP ( 2DIGIT / ( SP DIGIT ) )
const ASCTIME = new RegExp(`^${DAY} ${MONTH} (\\d{2}| \\d) ${TIME} (\\d{4})$`)

const utc = (
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number
): number | undefined => {
  // second = 2DIGIT, 60 allowed for a leap second; a day must exist in its month.
  if (day < 1 || hour > 23 || minute > 59 || second > 60) return undefined
  const t = Date.UTC(year, month, day, hour, minute, second)
  if (!Number.isFinite(t)) return undefined
  const date = new Date(t - (second === 60 ? 1000 : 0))
  if (date.getUTCDate() !== day || date.getUTCMonth() !== month) return undefined
  // Date.UTC maps years 0–99 to 1900–1999; IMF-fixdate and asctime years are literal.
  if (year < 100) {
    const exact = new Date(0)
    exact.setUTCFullYear(year, month, day)
    exact.setUTCHours(hour, minute, second, 0)
    return exact.getTime()
  }
  return t
}

// §5.6.7: "Recipients of a timestamp value in rfc850-date format, which uses a
// two-digit year, MUST interpret a timestamp that appears to be more than 50 years in
// the future as representing the most recent year in the past that had the same last
// two digits." The latest year with those digits not more than 50 years after now.
const rfc850Year = (
  yy: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  nowMillis: number
): number | undefined => {
  const now = new Date(nowMillis)
  const limit = new Date(nowMillis)
  limit.setUTCFullYear(now.getUTCFullYear() + 50)
  let year = Math.floor(now.getUTCFullYear() / 100) * 100 + 100 + yy
  for (let i = 0; i < 3; i++, year -= 100) {
    const t = utc(year, month, day, hour, minute, second)
    if (t !== undefined && t <= limit.getTime()) return t
  }
  return undefined
}

/**
 * Parses an HTTP date to epoch milliseconds; `undefined` for anything else. An
 * rfc850-date's two-digit year is the latest year with those digits that is not more
 * than 50 years after `nowMillis` (so on 2026-01-01 `-70` is 2070 and `-80` is 1980);
 * without `nowMillis` it is read against 2000-01-01.
 *
 * @since 0.2.0
 */
export const parse = (value: string, nowMillis?: number): number | undefined => {
  if (typeof value !== "string" || value.length > 64) return undefined
  let match = IMF_FIXDATE.exec(value)
  if (match !== null) {
    return utc(
      Number(match[3]),
      MONTHS[match[2]!]!,
      Number(match[1]),
      Number(match[4]),
      Number(match[5]),
      Number(match[6])
    )
  }
  match = RFC850.exec(value)
  if (match !== null) {
    const now = nowMillis !== undefined && Number.isFinite(nowMillis) ? nowMillis : Date.UTC(2000, 0, 1)
    return rfc850Year(
      Number(match[3]),
      MONTHS[match[2]!]!,
      Number(match[1]),
      Number(match[4]),
      Number(match[5]),
      Number(match[6]),
      now
    )
  }
  match = ASCTIME.exec(value)
  if (match !== null) {
    return utc(
      Number(match[6]),
      MONTHS[match[1]!]!,
      Number(match[2]!.trim()),
      Number(match[3]),
      Number(match[4]),
      Number(match[5])
    )
  }
  return undefined
}

import { Errors } from "@sluice/core"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as errorBody from "./errorBody.js"

/** @internal */
export interface HeaderNames {
  readonly criticality: string
  readonly attempt: string
  readonly throttle: string
  readonly dontRetry: string
  readonly retryAfter: string
  readonly rateLimitPolicy: string
  readonly rateLimit: string
}

/** @internal */
export const defaultHeaderNames: HeaderNames = {
  criticality: "x-sluice-criticality",
  attempt: "x-sluice-attempt",
  throttle: "x-sluice-throttle",
  dontRetry: "x-sluice-dont-retry",
  retryAfter: "retry-after",
  rateLimitPolicy: "ratelimit-policy",
  rateLimit: "ratelimit"
}

/** @internal */
export const MAX_ATTEMPT = 1000

/** @internal */
export const DEFAULT_MAX_RETRY_AFTER_MILLIS = 24 * 60 * 60 * 1000

const MAX_HEADER_LENGTH = 256

/** @internal */
export const headerValue = (value: string | ReadonlyArray<string> | null | undefined): string | undefined => {
  if (typeof value === "string") return value
  if (Array.isArray(value) && typeof value[0] === "string") return value[0]
  return undefined
}

/** @internal */
export const parseAttempt = (value: string | null | undefined, max: number = MAX_ATTEMPT): number => {
  if (typeof value !== "string" || value.length === 0 || value.length > 16) return 0
  const trimmed = value.trim()
  if (!/^\d+$/.test(trimmed)) return 0
  const n = Number(trimmed)
  if (!Number.isSafeInteger(n)) return max
  return n > max ? max : n
}

/** @internal */
export const parseFlag = (value: string | null | undefined): boolean => {
  if (typeof value !== "string" || value.length === 0 || value.length > 8) return false
  const v = value.trim().toLowerCase()
  return v === "1" || v === "true" || v === "yes"
}

// RFC 9110 §5.6.7. HTTP-date is case-sensitive: names exactly as the grammar spells them.
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
const DELAY_SECONDS = /^\d+$/

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

/** @internal */
export const parseHttpDate = (value: string, nowMillis?: number): number | undefined => {
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

/** @internal */
export const parseRetryAfterMillis = (
  value: string | null | undefined,
  nowMillis: number,
  maxMillis: number = DEFAULT_MAX_RETRY_AFTER_MILLIS
): number | undefined => {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_HEADER_LENGTH) return undefined
  // Field values arrive without leading/trailing whitespace (OWS); trim in case a caller did not.
  const trimmed = value.trim()
  // RFC 9110 §10.2.3: Retry-After = HTTP-date / delay-seconds, delay-seconds = 1*DIGIT.
  if (DELAY_SECONDS.test(trimmed)) {
    const seconds = Number(trimmed)
    if (!Number.isFinite(seconds)) return maxMillis
    const millis = seconds * 1000
    return millis > maxMillis ? maxMillis : millis
  }
  if (!Number.isFinite(nowMillis)) return undefined
  const at = parseHttpDate(trimmed, nowMillis)
  if (at === undefined) return undefined
  const delta = at - nowMillis
  if (delta <= 0) return 0
  return delta > maxMillis ? maxMillis : delta
}

/** @internal */
export const parseRetryAfter = (
  value: string | null | undefined,
  nowMillis: number,
  max?: Duration.DurationInput
): Option.Option<Duration.Duration> => {
  const maxMillis = max === undefined ? DEFAULT_MAX_RETRY_AFTER_MILLIS : Duration.toMillis(max)
  const millis = parseRetryAfterMillis(value, nowMillis, maxMillis)
  return millis === undefined ? Option.none() : Option.some(Duration.millis(millis))
}

/** @internal */
export const MAX_RETRY_AFTER_SECONDS = 24 * 60 * 60

/** @internal */
export const formatRetryAfter = (duration: Duration.DurationInput): string => {
  const millis = Duration.toMillis(duration)
  if (Number.isNaN(millis) || millis <= 0) return "0"
  // delay-seconds has no "never": an infinite or huge delay is sent as one day.
  if (millis >= MAX_RETRY_AFTER_SECONDS * 1000) return String(MAX_RETRY_AFTER_SECONDS)
  return String(Math.ceil(millis / 1000))
}

/** @internal */
export interface RateLimitTier {
  readonly name: string
  readonly limit: number
  readonly window?: Duration.DurationInput | undefined
  readonly remaining: number
  readonly reset?: Duration.DurationInput | undefined
}

const sfString = (name: string): string => {
  // Structured-field strings allow printable ASCII only; `"` and `\` are escaped.
  const printable = name.replace(/[^\x20-\x7e]|,/g, "").slice(0, 64)
  return `"${printable.replace(/[\\"]/g, (c) => `\\${c}`)}"`
}

const sfInteger = (n: number): string => {
  if (!Number.isFinite(n) || n < 0) return "0"
  return String(Math.min(Math.floor(n), 999_999_999_999_999))
}

const seconds = (d: Duration.DurationInput): string => {
  const millis = Duration.toMillis(d)
  return sfInteger(Number.isFinite(millis) ? Math.ceil(millis / 1000) : 0)
}

/** @internal */
export const formatRateLimitPolicy = (tiers: ReadonlyArray<RateLimitTier>): string =>
  tiers
    .map(
      (t) =>
        `${sfString(t.name)};q=${sfInteger(t.limit)}${t.window === undefined ? "" : `;w=${seconds(t.window)}`}`
    )
    .join(", ")

/** @internal */
export const formatRateLimit = (tiers: ReadonlyArray<RateLimitTier>): string =>
  tiers
    .map(
      (t) =>
        `${sfString(t.name)};r=${sfInteger(t.remaining)}${t.reset === undefined ? "" : `;t=${seconds(t.reset)}`}`
    )
    .join(", ")

/** @internal */
export interface RateLimitItem {
  readonly name: string
  readonly params: Readonly<Record<string, number>>
}

const ITEM = /^\s*"((?:[^"\\]|\\.){0,64})"((?:\s*;\s*[a-z][a-z0-9_-]{0,15}=\d{1,15})*)\s*$/
const PARAM = /;\s*([a-z][a-z0-9_-]{0,15})=(\d{1,15})/g

/** @internal */
export const parseRateLimitItems = (value: string | null | undefined): ReadonlyArray<RateLimitItem> => {
  if (typeof value !== "string" || value.length === 0 || value.length > 1024) return []
  const out: Array<RateLimitItem> = []
  for (const part of value.split(",").slice(0, 16)) {
    const match = ITEM.exec(part)
    if (match === null) continue
    const params: Record<string, number> = {}
    for (const p of match[2]!.matchAll(PARAM)) params[p[1]!] = Number(p[2])
    out.push({ name: match[1]!.replace(/\\(.)/g, "$1"), params })
  }
  return out
}

// ---- error bodies ------------------------------------------------------------------

const millisOf = (d: Duration.Duration): number => Duration.toMillis(d)

const dontRetryReasons: ReadonlySet<string> = new Set(Errors.DontRetryReason.literals)

const tagOf = (u: unknown): unknown =>
  typeof u === "object" && u !== null ? (u as { readonly _tag?: unknown })._tag : undefined

const isSluiceCause = (
  u: unknown
): u is Errors.Overloaded | Errors.QuotaExceeded | Errors.Throttled | Errors.CircuitOpen =>
  u instanceof Errors.Overloaded ||
  u instanceof Errors.QuotaExceeded ||
  u instanceof Errors.Throttled ||
  u instanceof Errors.CircuitOpen

const causeToDecoded = (
  e: Errors.Overloaded | Errors.QuotaExceeded | Errors.Throttled | Errors.CircuitOpen
): errorBody.DecodedCause => {
  switch (e._tag) {
    case "Overloaded":
      return e.retryAfter === undefined
        ? { _tag: "Overloaded", reason: e.reason }
        : { _tag: "Overloaded", reason: e.reason, retryAfterMs: millisOf(e.retryAfter) }
    case "QuotaExceeded":
      // `client` stays here: the caller knows who it is, and the id a tier is known by at the
      // tier below (its API key, say) must not reach the tiers above it.
      return {
        _tag: "QuotaExceeded",
        tier: e.tier,
        limit: e.limit,
        remaining: e.remaining,
        retryAfterMs: millisOf(e.retryAfter)
      }
    case "Throttled":
      return e.probability === undefined
        ? { _tag: "Throttled", key: e.key }
        : { _tag: "Throttled", key: e.key, probability: e.probability }
    case "CircuitOpen":
      return {
        _tag: "CircuitOpen",
        name: e.name,
        halfOpenAt: e.halfOpenAt,
        retryAfterMs: millisOf(e.retryAfter)
      }
  }
}

/**
 * What a `DontRetry` gave up on, as the body says it. A Sluice error is kept whole (a nested
 * `DontRetry` stands for its own cause); anything else (a timeout, a transport error) is named
 * by its tag only, as an `Overloaded`: that is what it is to the caller, and its message may
 * hold addresses of the tiers behind this one.
 */
const dontRetryCause = (cause: unknown): errorBody.DecodedCause | undefined => {
  let current = cause
  for (let depth = 0; depth < 4 && current instanceof Errors.DontRetry; depth++) current = current.cause
  if (current === undefined || current instanceof Errors.DontRetry) return undefined
  if (isSluiceCause(current)) return causeToDecoded(current)
  const tag = tagOf(current)
  const name = typeof tag === "string" ? tag : current instanceof Error ? current.name : "error"
  return { _tag: "Overloaded", reason: name.slice(0, 64) }
}

/** @internal */
export const toDecoded = (error: Errors.SluiceError): errorBody.Decoded => {
  if (error._tag !== "DontRetry") return causeToDecoded(error)
  const cause = dontRetryCause(error.cause)
  return {
    _tag: "DontRetry",
    reason: error.reason,
    ...(error.attempts !== undefined ? { attempts: error.attempts } : {}),
    ...(cause !== undefined ? { cause } : {})
  }
}

const causeFromDecoded = (
  d: errorBody.DecodedCause
): Errors.Overloaded | Errors.QuotaExceeded | Errors.Throttled | Errors.CircuitOpen => {
  switch (d._tag) {
    case "Overloaded":
      return new Errors.Overloaded(
        d.retryAfterMs === undefined
          ? { reason: d.reason }
          : { reason: d.reason, retryAfter: Duration.millis(d.retryAfterMs) }
      )
    case "QuotaExceeded":
      return new Errors.QuotaExceeded({
        tier: d.tier,
        limit: d.limit,
        remaining: d.remaining,
        retryAfter: Duration.millis(d.retryAfterMs)
      })
    case "Throttled":
      return new Errors.Throttled(
        d.probability === undefined ? { key: d.key } : { key: d.key, probability: d.probability }
      )
    case "CircuitOpen":
      return new Errors.CircuitOpen({
        name: d.name,
        halfOpenAt: d.halfOpenAt,
        retryAfter: Duration.millis(d.retryAfterMs)
      })
  }
}

/** @internal */
export const fromDecoded = (d: errorBody.Decoded): Errors.SluiceError => {
  if (d._tag !== "DontRetry") return causeFromDecoded(d)
  return new Errors.DontRetry({
    // a reason this version does not know still means "don't retry": the server said so
    reason: dontRetryReasons.has(d.reason) ? (d.reason as Errors.DontRetryReason) : "server",
    ...(d.attempts !== undefined ? { attempts: d.attempts } : {}),
    ...(d.cause !== undefined ? { cause: causeFromDecoded(d.cause) } : {})
  })
}

/** @internal */
export const formatErrorBody = (error: Errors.SluiceError): errorBody.ErrorBody =>
  errorBody.encode(toDecoded(error))

/** @internal */
export const parseErrorBody = (body: unknown): Option.Option<Errors.SluiceError> => {
  const decoded = typeof body === "string" ? errorBody.parse(body) : errorBody.decode(body)
  return decoded === undefined ? Option.none() : Option.some(fromDecoded(decoded))
}

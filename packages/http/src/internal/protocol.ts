import * as Duration from "effect/Duration"
import * as Option from "effect/Option"

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

const MONTHS: Record<string, number> = {
  jan: 0,
  feb: 1,
  mar: 2,
  apr: 3,
  may: 4,
  jun: 5,
  jul: 6,
  aug: 7,
  sep: 8,
  oct: 9,
  nov: 10,
  dec: 11
}

// RFC 9110 §5.6.7: IMF-fixdate, plus the two obsolete forms a recipient must accept.
const IMF_FIXDATE = /^[A-Za-z]{3}, (\d{2}) ([A-Za-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/
const RFC850 = /^[A-Za-z]{6,9}, (\d{2})-([A-Za-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/
const ASCTIME = /^[A-Za-z]{3} ([A-Za-z]{3}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/

const utc = (
  year: number,
  month: string,
  day: number,
  hour: number,
  minute: number,
  second: number
): number | undefined => {
  const m = MONTHS[month.toLowerCase()]
  if (m === undefined) return undefined
  if (day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return undefined
  const t = Date.UTC(year, m, day, hour, minute, second)
  return Number.isFinite(t) ? t : undefined
}

/** @internal */
export const parseHttpDate = (value: string): number | undefined => {
  let match = IMF_FIXDATE.exec(value)
  if (match !== null) {
    return utc(
      Number(match[3]),
      match[2]!,
      Number(match[1]),
      Number(match[4]),
      Number(match[5]),
      Number(match[6])
    )
  }
  match = RFC850.exec(value)
  if (match !== null) {
    // RFC 9110: a two-digit year more than 50 years in the future means the past century;
    // without a clock here, 00–69 → 20xx, 70–99 → 19xx as most implementations do.
    const yy = Number(match[3])
    return utc(
      yy < 70 ? 2000 + yy : 1900 + yy,
      match[2]!,
      Number(match[1]),
      Number(match[4]),
      Number(match[5]),
      Number(match[6])
    )
  }
  match = ASCTIME.exec(value)
  if (match !== null) {
    return utc(
      Number(match[6]),
      match[1]!,
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
  const trimmed = value.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) {
    const seconds = Number(trimmed)
    if (!Number.isFinite(seconds)) return maxMillis
    const millis = Math.ceil(seconds * 1000)
    return millis > maxMillis ? maxMillis : millis
  }
  const at = parseHttpDate(trimmed)
  if (at === undefined || !Number.isFinite(nowMillis)) return undefined
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
export const formatRetryAfter = (duration: Duration.DurationInput): string => {
  const millis = Duration.toMillis(duration)
  if (!Number.isFinite(millis) || millis <= 0) return "0"
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

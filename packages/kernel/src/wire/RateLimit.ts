/**
 * The `RateLimit-Policy` and `RateLimit` headers of the IETF HTTP rate-limit headers
 * draft (draft-ietf-httpapi-ratelimit-headers): one structured-field item per quota
 * tier, `"spike";q=20;w=1` (quota units per window of seconds) and `"spike";r=0;t=1`
 * (remaining units, seconds until reset). A quota refusal carries them beside
 * `Retry-After`, so a client learns which tier refused it and when it refills.
 *
 * Names are written as valid sf-strings whatever they hold (printable ASCII, quotes
 * and backslashes escaped, at most 64 characters); numbers as sf-integers. Reading is
 * lenient and bounded: malformed items are skipped, never thrown.
 *
 * @since 0.2.0
 */

/**
 * One quota tier as the headers describe it; durations in milliseconds.
 *
 * @since 0.2.0
 */
export interface Tier {
  readonly name: string
  readonly limit: number
  readonly windowMillis?: number | undefined
  readonly remaining: number
  readonly resetMillis?: number | undefined
}

/**
 * One parsed item of a `RateLimit` or `RateLimit-Policy` header.
 *
 * @since 0.2.0
 */
export interface Item {
  readonly name: string
  readonly params: Readonly<Record<string, number>>
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

const seconds = (millis: number): string => sfInteger(Number.isFinite(millis) ? Math.ceil(millis / 1000) : 0)

/**
 * Formats `RateLimit-Policy`: `"spike";q=20;w=1, "count";q=5000;w=3600`.
 *
 * @since 0.2.0
 */
export const formatPolicy = (tiers: ReadonlyArray<Tier>): string =>
  tiers
    .map(
      (t) =>
        `${sfString(t.name)};q=${sfInteger(t.limit)}${t.windowMillis === undefined ? "" : `;w=${seconds(t.windowMillis)}`}`
    )
    .join(", ")

/**
 * Formats `RateLimit`: `"spike";r=0;t=1` (remaining units and seconds until reset,
 * rounded up).
 *
 * @since 0.2.0
 */
export const format = (tiers: ReadonlyArray<Tier>): string =>
  tiers
    .map(
      (t) =>
        `${sfString(t.name)};r=${sfInteger(t.remaining)}${t.resetMillis === undefined ? "" : `;t=${seconds(t.resetMillis)}`}`
    )
    .join(", ")

const ITEM = /^\s*"((?:[^"\\]|\\.){0,64})"((?:\s*;\s*[a-z][a-z0-9_-]{0,15}=\d{1,15})*)\s*$/
const PARAM = /;\s*([a-z][a-z0-9_-]{0,15})=(\d{1,15})/g

/**
 * Parses a `RateLimit` or `RateLimit-Policy` header leniently: at most 1024
 * characters and 16 items are read; malformed items are skipped.
 *
 * @since 0.2.0
 */
export const parse = (value: string | null | undefined): ReadonlyArray<Item> => {
  if (typeof value !== "string" || value.length === 0 || value.length > 1024) return []
  const out: Array<Item> = []
  for (const part of value.split(",").slice(0, 16)) {
    const match = ITEM.exec(part)
    if (match === null) continue
    const params: Record<string, number> = {}
    for (const p of match[2]!.matchAll(PARAM)) params[p[1]!] = Number(p[2])
    out.push({ name: match[1]!.replace(/\\(.)/g, "$1"), params })
  }
  return out
}

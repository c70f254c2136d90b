/**
 * Request criticality: how important a piece of work is, as the SRE book's "Handling Overload"
 * chapter describes it. Four levels, most important first: `CRITICAL_PLUS`, `CRITICAL` (the
 * default), `SHEDDABLE_PLUS`, `SHEDDABLE`. Throttles, quotas and shedders rank work by it: under
 * pressure the least critical goes first.
 *
 * A level arrives in a header from callers a server may not trust, so parsing never throws
 * (anything unknown, empty or oversized gives the fallback) and `clamp` lowers a claimed level
 * to the ceiling the caller is trusted with.
 *
 * @since 0.2.0
 */

/**
 * @since 0.2.0
 */
export type Criticality = "CRITICAL_PLUS" | "CRITICAL" | "SHEDDABLE_PLUS" | "SHEDDABLE"

/**
 * Every level, most important first.
 *
 * @since 0.2.0
 */
export const levels: ReadonlyArray<Criticality> = ["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE"]

/**
 * Every level, least important first: the order in which a per-level setting (a shedding
 * threshold, a throttle's K) must not decrease.
 *
 * @since 0.2.0
 */
export const ascending: ReadonlyArray<Criticality> = [
  "SHEDDABLE",
  "SHEDDABLE_PLUS",
  "CRITICAL",
  "CRITICAL_PLUS"
]

/**
 * The first level whose value is below that of the next less critical one (it would be
 * refused before less important work), with that less critical level; `undefined` when the
 * values do not decrease with criticality.
 *
 * @since 0.2.0
 */
export const misordered = (
  values: Readonly<Record<Criticality, number>>
): { readonly level: Criticality; readonly lower: Criticality } | undefined => {
  for (let i = 1; i < ascending.length; i++) {
    const lower = ascending[i - 1]!
    const level = ascending[i]!
    if (values[level] < values[lower]) return { level, lower }
  }
  return undefined
}

/**
 * The default level: `CRITICAL`.
 *
 * @since 0.2.0
 */
export const defaultLevel: Criticality = "CRITICAL"

const ranks: Record<Criticality, number> = {
  CRITICAL_PLUS: 3,
  CRITICAL: 2,
  SHEDDABLE_PLUS: 1,
  SHEDDABLE: 0
}

/**
 * The importance of a level as a number: `SHEDDABLE` = 0 … `CRITICAL_PLUS` = 3.
 *
 * @since 0.2.0
 */
export const rank = (level: Criticality): number => ranks[level]

/**
 * Orders by importance: negative when `a` is less critical than `b`, 0 when equal, positive
 * when more critical.
 *
 * @since 0.2.0
 */
export const compare = (a: Criticality, b: Criticality): -1 | 0 | 1 => {
  const d = ranks[a] - ranks[b]
  return d < 0 ? -1 : d > 0 ? 1 : 0
}

// Longer than any level with room for spaces: a longer header value is not worth normalising.
const MAX_HEADER_LENGTH = 32

/**
 * Parses a header value. Case-insensitive, `-` or `_` separators, surrounding spaces ignored;
 * anything unknown, empty, oversized or hostile (`__proto__`) gives the fallback (default
 * `CRITICAL`). Never throws.
 *
 * @since 0.2.0
 */
export const parse = (
  value: string | null | undefined,
  fallback: Criticality = defaultLevel
): Criticality => {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_HEADER_LENGTH) return fallback
  // a level in its own spelling, as every Sluice client sends it: nothing to normalize
  if (Object.prototype.hasOwnProperty.call(ranks, value)) return value as Criticality
  const normalized = value.trim().toUpperCase().replace(/-/g, "_")
  return Object.prototype.hasOwnProperty.call(ranks, normalized) ? (normalized as Criticality) : fallback
}

/**
 * Lowers `level` to `ceiling`: a caller that is not trusted cannot claim more than the ceiling.
 *
 * @since 0.2.0
 */
export const clamp = (level: Criticality, ceiling: Criticality): Criticality =>
  ranks[level] > ranks[ceiling] ? ceiling : level

/**
 * Whether `self` is at least as critical as `that`.
 *
 * @since 0.2.0
 */
export const isAtLeast = (self: Criticality, that: Criticality): boolean => ranks[self] >= ranks[that]

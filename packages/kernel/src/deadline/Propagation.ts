/**
 * A call's deadline across hops. Every attempt carries the time left of its call's deadline
 * as a relative number of milliseconds (`x-sluice-deadline-ms`, like gRPC's `grpc-timeout`),
 * so the two hosts' clocks never need to agree. The server turns it back into a deadline on
 * its own clock, less a margin for the answer's way back, and whatever the handler calls
 * downstream inherits what is left: work whose caller has given up is refused instead of done.
 *
 * A caller the server does not trust may shorten its own deadline but not claim one longer
 * than the server's maximum for untrusted callers. A malformed value is no deadline, never an
 * error; times are epoch milliseconds and `Infinity` is "no deadline".
 *
 * @since 1.0.0
 */

/**
 * The longest relative deadline believed from anyone (a day): a larger claim is clamped to it.
 *
 * @since 1.0.0
 */
export const MAX_DEADLINE_MS = 86_400_000

/**
 * The value an attempt sends: whole milliseconds left until `deadline` (rounded down, never
 * negative), or `undefined` when the call has no deadline.
 *
 * @since 1.0.0
 */
export const outgoing = (deadline: number, now: number): string | undefined =>
  deadline === Infinity || Number.isNaN(deadline)
    ? undefined
    : String(Math.max(0, Math.floor(deadline - now)))

/**
 * Parses a deadline header: digits only (surrounding whitespace allowed, at most 16
 * characters), in milliseconds, clamped to {@link MAX_DEADLINE_MS}; anything else is
 * `undefined` (no deadline).
 *
 * @since 1.0.0
 */
export const parse = (value: string | null | undefined): number | undefined => {
  if (typeof value !== "string" || value.length === 0 || value.length > 16) return undefined
  const trimmed = value.trim()
  if (!/^\d+$/.test(trimmed)) return undefined
  const ms = Number(trimmed)
  return ms > MAX_DEADLINE_MS ? MAX_DEADLINE_MS : ms
}

/**
 * What a server believes of a caller's deadline.
 *
 * @since 1.0.0
 */
export interface Incoming {
  /** the parsed header (`undefined`: the caller sent none) */
  readonly claimedMs: number | undefined
  /** whether the trust policy believes the caller */
  readonly trusted: boolean
  /** the longest deadline an untrusted caller may claim (`Infinity`: no clamp) */
  readonly maxUntrustedMs: number
  /** subtracted for the answer's way back to the caller */
  readonly marginMs: number
  readonly now: number
}

/**
 * The request's deadline on this server's clock: `now + claimed − margin` (the claim clamped
 * for an untrusted caller), `Infinity` when the caller sent none. At or before `now` means the
 * caller will have given up before an answer could reach it.
 *
 * @since 1.0.0
 */
export const incoming = (facts: Incoming): number => {
  if (facts.claimedMs === undefined) return Infinity
  const claimed = facts.trusted ? facts.claimedMs : Math.min(facts.claimedMs, facts.maxUntrustedMs)
  return facts.now + Math.max(0, claimed - facts.marginMs)
}

/**
 * Whether the work under `deadline` is already too late to start: its caller will not read
 * the answer.
 *
 * @since 1.0.0
 */
export const expired = (deadline: number, now: number): boolean => deadline <= now

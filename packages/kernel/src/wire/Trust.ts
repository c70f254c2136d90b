/**
 * Who is believed. A request carries claims about itself that change how a server treats it
 * and others: its criticality (a caller claiming `CRITICAL_PLUS` is shed last) and its attempt
 * number (a server whose traffic is mostly retries answers "don't retry" to everybody). Anybody
 * can send those headers, so a server believes them only from callers a policy trusts: a
 * trusted caller's level is used as is, anybody else's is clamped to a ceiling (and their
 * attempt numbers are recorded apart, where they decide nothing).
 *
 * A policy is a synchronous predicate of the request; one that throws, or answers anything but
 * `true`, trusts nobody. A shared secret is the usual policy between one's own tiers: at least
 * {@link MIN_SECRET_LENGTH} characters, in a header whose name is a lower-case token.
 *
 * @since 0.2.0
 */
import * as Criticality from "../criticality/Criticality.js"

/**
 * Decides whether a request's claims about itself are believed.
 *
 * @since 0.2.0
 */
export type Policy<R> = (request: R) => boolean

/**
 * Trusts nobody (the default).
 *
 * @since 0.2.0
 */
export const none: Policy<unknown> = () => false

/**
 * Trusts everybody.
 *
 * @since 0.2.0
 */
export const everyone: Policy<unknown> = () => true

/**
 * Runs a policy: one that throws or answers anything but `true` does not trust.
 *
 * @since 0.2.0
 */
export const evaluate = <R>(policy: Policy<R>, request: R): boolean => {
  try {
    return policy(request) === true
  } catch {
    return false
  }
}

/**
 * Trusts a request only if every policy does (none given: nobody).
 *
 * @since 0.2.0
 */
export const all =
  <R>(...policies: ReadonlyArray<Policy<R>>): Policy<R> =>
  (request) => {
    if (policies.length === 0) return false
    for (const policy of policies) if (!evaluate(policy, request)) return false
    return true
  }

/**
 * Trusts a request if any policy does (none given: nobody).
 *
 * @since 0.2.0
 */
export const any =
  <R>(...policies: ReadonlyArray<Policy<R>>): Policy<R> =>
  (request) => {
    for (const policy of policies) if (evaluate(policy, request)) return true
    return false
  }

/**
 * Whether an address is on the loopback interface: `127.0.0.0/8`, `::1`, `::ffff:127.x.y.z`.
 *
 * @since 0.2.0
 */
export const isLoopbackAddress = (address: string): boolean => {
  const a = address.toLowerCase()
  if (a === "::1" || a === "0:0:0:0:0:0:0:1") return true
  const v4 = a.startsWith("::ffff:") ? a.slice(7) : a
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4)
}

/**
 * The level a request is served at from its criticality header: a trusted caller's claim as
 * it is (`fallback` without one); anybody else's at most `ceiling`, and a missing claim is
 * `fallback` at most `ceiling` too (the default may exceed the ceiling only for trusted
 * callers).
 *
 * @since 0.2.0
 */
export const level = (
  header: string | undefined,
  trusted: boolean,
  ceiling: Criticality.Criticality,
  fallback: Criticality.Criticality
): Criticality.Criticality =>
  trusted
    ? Criticality.parse(header, fallback)
    : Criticality.clamp(Criticality.parse(header, Criticality.clamp(fallback, ceiling)), ceiling)

/**
 * The shortest shared secret accepted: 16 characters.
 *
 * @since 0.2.0
 */
export const MIN_SECRET_LENGTH = 16

/**
 * The header a shared secret travels in by default.
 *
 * @since 0.2.0
 */
export const DEFAULT_SECRET_HEADER = "x-sluice-trust"

/**
 * Whether a header name is a lower-case token (RFC 9110 `tchar`s), as incoming names are.
 *
 * @since 0.2.0
 */
export const isHeaderName = (name: string): boolean => /^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(name)

/**
 * The value presented as a shared secret: a single header value of 1 to 1024 characters;
 * `undefined` for anything else (it cannot be the secret, and is not hashed).
 *
 * @since 0.2.0
 */
export const presentedSecret = (raw: unknown): string | undefined =>
  typeof raw === "string" && raw.length > 0 && raw.length <= 1024 ? raw : undefined

/**
 * Sluice's own JSON encoding of its errors in response bodies: `{ "error": { "_tag": ...,
 * ...fields } }`, durations as plain milliseconds in fields named `…Ms`, numbers JSON
 * cannot hold (`Infinity`, `-Infinity`, `NaN`) as those strings. What crosses a process
 * boundary must not depend on which Effect line (or which Schema version) encoded it,
 * so the encoding is plain data and plain functions: both Effect lines, and any client in
 * any language, read the same bytes. Reading is total and bounded: a foreign body, an
 * unknown tag, a missing or mistyped field is `undefined`, never a throw; long strings are
 * cut.
 *
 * | `_tag` | fields |
 * |---|---|
 * | `Overloaded` | `reason`, `retryAfterMs?` |
 * | `QuotaExceeded` | `tier`, `limit`, `remaining`, `retryAfterMs` |
 * | `Throttled` | `key`, `probability?` |
 * | `CircuitOpen` | `name`, `halfOpenAt` (epoch ms), `retryAfterMs` |
 * | `DontRetry` | `reason`, `attempts?`, `cause?` (one of the four above) |
 *
 * @since 0.2.0
 */

/** A number as JSON carries it: `Infinity`, `-Infinity` and `NaN` as strings. @since 0.2.0 */
export type PortableNumber = number | "Infinity" | "-Infinity" | "NaN"

/** An `Overloaded` as JSON: the backend refused the work because it is busy. @since 0.2.0 */
export interface OverloadedJson {
  readonly _tag: "Overloaded"
  readonly reason: string
  readonly retryAfterMs?: PortableNumber
}

/** A `QuotaExceeded` as JSON: the caller is over a quota tier. @since 0.2.0 */
export interface QuotaExceededJson {
  readonly _tag: "QuotaExceeded"
  readonly tier: string
  readonly limit: PortableNumber
  readonly remaining: PortableNumber
  readonly retryAfterMs: PortableNumber
}

/** A `Throttled` as JSON: refused by a client-side throttle. @since 0.2.0 */
export interface ThrottledJson {
  readonly _tag: "Throttled"
  readonly key: string
  readonly probability?: PortableNumber
}

/** A `CircuitOpen` as JSON: a breaker is open; `halfOpenAt` in epoch milliseconds. @since 0.2.0 */
export interface CircuitOpenJson {
  readonly _tag: "CircuitOpen"
  readonly name: string
  readonly halfOpenAt: PortableNumber
  readonly retryAfterMs: PortableNumber
}

/** What a `DontRetry` may wrap: any error of the encoding but another `DontRetry`. @since 0.2.0 */
export type CauseJson = OverloadedJson | QuotaExceededJson | ThrottledJson | CircuitOpenJson

/** A `DontRetry` as JSON: terminal, with why and after how many attempts, and what it gave up on. @since 0.2.0 */
export interface DontRetryJson {
  readonly _tag: "DontRetry"
  readonly reason: string
  readonly attempts?: number
  readonly cause?: CauseJson
}

/** Any error of the encoding, as JSON. @since 0.2.0 */
export type ErrorJson = CauseJson | DontRetryJson

/** The body of an error response: `{ "error": { "_tag": ..., ... } }`. @since 0.2.0 */
export interface ErrorBody {
  readonly error: ErrorJson
}

/** A number as JSON can carry it (`Infinity`, `-Infinity`, `NaN` as strings). @since 0.2.0 */
export const portable = (n: number): PortableNumber =>
  Number.isNaN(n) ? "NaN" : n === Infinity ? "Infinity" : n === -Infinity ? "-Infinity" : n

// A bound for what a body may make a reader hold: like any text a server sends, a longer
// string is cut; a Sluice server's own reasons stay far below it.
/** The longest string read from a body; longer ones are cut (an ellipsis marks the cut). @since 0.2.0 */
export const MAX_STRING = 1024

const str = (u: unknown): string | undefined => {
  if (typeof u !== "string") return undefined
  return u.length > MAX_STRING ? `${u.slice(0, MAX_STRING)}…` : u
}

const num = (u: unknown): number | undefined => {
  if (typeof u === "number") return Number.isFinite(u) ? u : undefined
  if (u === "Infinity") return Infinity
  if (u === "-Infinity") return -Infinity
  if (u === "NaN") return NaN
  return undefined
}

const nonNegative = (u: unknown): number | undefined => {
  const n = num(u)
  return n !== undefined && n >= 0 ? n : undefined
}

/** The fields of a decoded error, numbers as numbers (`Infinity` included). @since 0.2.0 */
export type Decoded =
  | { readonly _tag: "Overloaded"; readonly reason: string; readonly retryAfterMs?: number }
  | {
      readonly _tag: "QuotaExceeded"
      readonly tier: string
      readonly limit: number
      readonly remaining: number
      readonly retryAfterMs: number
    }
  | { readonly _tag: "Throttled"; readonly key: string; readonly probability?: number }
  | {
      readonly _tag: "CircuitOpen"
      readonly name: string
      readonly halfOpenAt: number
      readonly retryAfterMs: number
    }
  | {
      readonly _tag: "DontRetry"
      readonly reason: string
      readonly attempts?: number
      readonly cause?: DecodedCause
    }

/** A decoded error that a `DontRetry` may wrap. @since 0.2.0 */
export type DecodedCause = Exclude<Decoded, { readonly _tag: "DontRetry" }>

const cause = (u: unknown): DecodedCause | undefined => {
  if (typeof u !== "object" || u === null || Array.isArray(u)) return undefined
  const o = u as Record<string, unknown>
  switch (o._tag) {
    case "Overloaded": {
      const reason = str(o.reason)
      if (reason === undefined) return undefined
      const retryAfterMs = nonNegative(o.retryAfterMs)
      return retryAfterMs === undefined
        ? { _tag: "Overloaded", reason }
        : { _tag: "Overloaded", reason, retryAfterMs }
    }
    case "QuotaExceeded": {
      const tier = str(o.tier)
      const limit = nonNegative(o.limit)
      const remaining = nonNegative(o.remaining)
      const retryAfterMs = nonNegative(o.retryAfterMs)
      if (tier === undefined || limit === undefined || remaining === undefined || retryAfterMs === undefined)
        return undefined
      return { _tag: "QuotaExceeded", tier, limit, remaining, retryAfterMs }
    }
    case "Throttled": {
      const key = str(o.key)
      if (key === undefined) return undefined
      const probability = num(o.probability)
      return probability === undefined || Number.isNaN(probability)
        ? { _tag: "Throttled", key }
        : { _tag: "Throttled", key, probability }
    }
    case "CircuitOpen": {
      const name = str(o.name)
      const halfOpenAt = num(o.halfOpenAt)
      const retryAfterMs = nonNegative(o.retryAfterMs)
      if (name === undefined || halfOpenAt === undefined || retryAfterMs === undefined) return undefined
      return { _tag: "CircuitOpen", name, halfOpenAt, retryAfterMs }
    }
  }
  return undefined
}

/**
 * Reads Sluice's encoding from a parsed body; `undefined` for anything else (a foreign body,
 * an unknown tag, a missing or mistyped field). Never throws. A `DontRetry` reason this
 * version does not know is kept as it is: the reader decides what to make of it.
 *
 * @since 0.2.0
 */
export const decode = (body: unknown): Decoded | undefined => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return undefined
  const error = (body as Record<string, unknown>).error
  if (typeof error !== "object" || error === null || Array.isArray(error)) return undefined
  const o = error as Record<string, unknown>
  if (o._tag !== "DontRetry") return cause(o)
  const reason = str(o.reason)
  if (reason === undefined) return undefined
  const attempts = nonNegative(o.attempts)
  const inner = cause(o.cause)
  return {
    _tag: "DontRetry",
    reason,
    ...(attempts !== undefined && Number.isSafeInteger(attempts) ? { attempts } : {}),
    ...(inner !== undefined ? { cause: inner } : {})
  }
}

const MAX_FOREIGN_NAME = 64

/**
 * What a `DontRetry` gave up on when that is not one of Sluice's errors (a timeout, a transport
 * error): an `Overloaded` named by the cause's `_tag` (else its `name` as an `Error`, else
 * `"error"`), at most 64 characters. That is what it is to the caller, and its message may hold
 * addresses of the tiers behind the server, so only its name is sent.
 *
 * @since 0.2.0
 */
export const foreignCause = (cause: unknown): DecodedCause => {
  const tag =
    typeof cause === "object" && cause !== null ? (cause as { readonly _tag?: unknown })._tag : undefined
  const name = typeof tag === "string" ? tag : cause instanceof Error ? cause.name : "error"
  return { _tag: "Overloaded", reason: name.slice(0, MAX_FOREIGN_NAME) }
}

/** The longest body text parsed as Sluice's: a server's own error bodies are far shorter. @since 0.2.0 */
export const MAX_BODY = 64 * 1024

/** Parses a body's text; a text longer than `MAX_BODY` is not Sluice's. @since 0.2.0 */
export const parse = (text: string): Decoded | undefined => {
  const trimmed = text.trim()
  if (!trimmed.startsWith("{") || trimmed.length > MAX_BODY) return undefined
  try {
    return decode(JSON.parse(trimmed))
  } catch {
    return undefined
  }
}

/**
 * A hint as it is sent: a wait cannot be negative, and `NaN` says nothing, so both are 0
 * ("no wait known"); `Infinity` stays "never". Readers refuse a negative hint, so without
 * this a body would not decode at all.
 *
 * @since 1.0.0
 */
export const hint = (millis: number): number => (Number.isNaN(millis) || millis <= 0 ? 0 : millis)

const causeJson = (e: DecodedCause): CauseJson => {
  switch (e._tag) {
    case "Overloaded":
      return e.retryAfterMs === undefined
        ? { _tag: "Overloaded", reason: e.reason }
        : { _tag: "Overloaded", reason: e.reason, retryAfterMs: portable(hint(e.retryAfterMs)) }
    case "QuotaExceeded":
      return {
        _tag: "QuotaExceeded",
        tier: e.tier,
        limit: portable(e.limit),
        remaining: portable(e.remaining),
        retryAfterMs: portable(hint(e.retryAfterMs))
      }
    case "Throttled":
      return e.probability === undefined
        ? { _tag: "Throttled", key: e.key }
        : { _tag: "Throttled", key: e.key, probability: portable(e.probability) }
    case "CircuitOpen":
      return {
        _tag: "CircuitOpen",
        name: e.name,
        halfOpenAt: portable(e.halfOpenAt),
        retryAfterMs: portable(hint(e.retryAfterMs))
      }
  }
}

/** The body for an error (JSON-ready: `JSON.stringify` keeps every field). @since 0.2.0 */
export const encode = (e: Decoded): ErrorBody => {
  if (e._tag !== "DontRetry") return { error: causeJson(e) }
  return {
    error: {
      _tag: "DontRetry",
      reason: e.reason,
      ...(e.attempts !== undefined ? { attempts: e.attempts } : {}),
      ...(e.cause !== undefined ? { cause: causeJson(e.cause) } : {})
    }
  }
}

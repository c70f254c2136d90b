/**
 * The Sluice wire protocol (docs/ARCHITECTURE.md §4): header names and the parsing and
 * formatting of every header value.
 *
 * | direction | signal |
 * |---|---|
 * | request | `x-sluice-criticality: CRITICAL` |
 * | request | `x-sluice-attempt: 0` (tries before this one) |
 * | response | `x-sluice-throttle: 1` (or a JSON attribute `"throttle": true`) |
 * | response | `x-sluice-dont-retry: 1` |
 * | response | `429` + `Retry-After` + `RateLimit-Policy` / `RateLimit` |
 * | response | `503` (+ `Retry-After`) |
 * | response | `204` (sampled out) |
 * | response body | `{ "error": { "_tag": "Overloaded", "reason": "…", "retryAfterMs": 1500 } }` |
 *
 * Error bodies use Sluice's own JSON encoding ({@link formatErrorBody},
 * {@link parseErrorBody}): durations are plain milliseconds, never a Schema's
 * encoded form, so the bytes are the same whatever Effect version wrote them.
 *
 * Every parser here is total: a malformed or hostile value is ignored or clamped,
 * never thrown.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import { Criticality, type Errors } from "@sluice/core"
import type * as KernelErrorBody from "@sluice/kernel/wire/ErrorBody"
import * as Headers from "@sluice/kernel/wire/Headers"
import * as HttpDate from "@sluice/kernel/wire/HttpDate"
import * as RateLimit from "@sluice/kernel/wire/RateLimit"
import * as RetryAfter from "@sluice/kernel/wire/RetryAfter"
import * as internal from "./internal/protocol.js"

/**
 * The header names the protocol uses. Names must be lower case (Node and
 * `effect/http` lower-case incoming header names).
 *
 * @since 0.1.0
 * @category models
 */
export interface HeaderNames extends Headers.HeaderNames {}

/**
 * The default header names of docs/ARCHITECTURE.md §4.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultHeaderNames: HeaderNames = Headers.defaultHeaderNames

/**
 * The protocol settings every Sluice middleware and client reads: header names,
 * the JSON attribute that carries the throttle flag, the largest attempt number
 * believed, and the longest `Retry-After` taken literally.
 *
 * @since 0.1.0
 * @category models
 */
export interface WireProtocolSettings {
  readonly headers: HeaderNames
  readonly throttleAttribute: string
  readonly maxAttempt: number
  readonly maxRetryAfter: Duration.Input
}

/**
 * The protocol in use, as a `Context.Reference`: it has defaults, so nothing needs
 * to provide it; provide it (e.g. with {@link layer}, or `Effect.provideService`)
 * to rename headers.
 *
 * @example
 * ```ts
 * import { Protocol } from "@sluice/http"
 * import { Effect } from "effect"
 *
 * const renamed = Protocol.layer({ headers: { criticality: "x-acme-criticality" } })
 * const headerName = Effect.map(Protocol.WireProtocol, (settings) => settings.headers.criticality).pipe(
 *   Effect.provide(renamed)
 * )
 * Effect.runPromise(headerName).then(console.log) // prints: x-acme-criticality
 * ```
 * @since 0.1.0
 * @category references
 */
export const WireProtocol: Context.Reference<WireProtocolSettings> = Context.Reference<WireProtocolSettings>(
  "@sluice/http/WireProtocol",
  {
    defaultValue: () => ({
      headers: Headers.defaultHeaderNames,
      throttleAttribute: "throttle",
      maxAttempt: Headers.MAX_ATTEMPT,
      maxRetryAfter: RetryAfter.DEFAULT_MAX_MILLIS
    })
  }
)

/**
 * Builds protocol settings from partial overrides (header names are lower-cased).
 *
 * @example
 * ```ts
 * import { Protocol } from "@sluice/http"
 *
 * const settings = Protocol.make({ headers: { attempt: "X-Try" } })
 * console.log(settings.headers.attempt) // prints: x-try
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  overrides: {
    readonly headers?: Partial<HeaderNames> | undefined
    readonly throttleAttribute?: string | undefined
    readonly maxAttempt?: number | undefined
    readonly maxRetryAfter?: Duration.Input | undefined
  } = {}
): WireProtocolSettings => {
  const headers: Record<string, string> = { ...Headers.defaultHeaderNames }
  for (const [key, value] of Object.entries(overrides.headers ?? {})) {
    if (typeof value === "string" && value.length > 0) headers[key] = value.toLowerCase()
  }
  return {
    headers: headers as unknown as HeaderNames,
    throttleAttribute: overrides.throttleAttribute ?? "throttle",
    maxAttempt: overrides.maxAttempt ?? Headers.MAX_ATTEMPT,
    maxRetryAfter: overrides.maxRetryAfter ?? RetryAfter.DEFAULT_MAX_MILLIS
  }
}

/**
 * A Layer that provides {@link WireProtocol} with the given overrides.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (overrides: Parameters<typeof make>[0]): Layer.Layer<never> =>
  Layer.succeed(WireProtocol, make(overrides))

/**
 * Parses `x-sluice-attempt`: digits only; anything else is 0, anything above
 * `max` is `max`.
 *
 * @example
 * ```ts
 * import { Protocol } from "@sluice/http"
 *
 * console.log(Protocol.parseAttempt("2")) // prints: 2
 * console.log(Protocol.parseAttempt("-1")) // prints: 0
 * console.log(Protocol.parseAttempt("99999")) // prints: 1000
 * ```
 * @since 0.1.0
 * @category utils
 */
export const parseAttempt: (value: string | null | undefined, max?: number) => number = Headers.parseAttempt

/**
 * Parses a boolean flag header (`1`, `true`, `yes`); anything else is `false`.
 *
 * @example
 * ```ts
 * import { Protocol } from "@sluice/http"
 *
 * console.log(Protocol.parseFlag("1")) // prints: true
 * ```
 * @since 0.1.0
 * @category utils
 */
export const parseFlag: (value: string | null | undefined) => boolean = Headers.parseFlag

/**
 * Whether a response is a degraded answer (`x-sluice-degraded: 1`, or the header named in
 * `names`): a cheaper answer a server gave under overload instead of refusing.
 *
 * @example
 * ```ts
 * import { Protocol } from "@sluice/http"
 *
 * console.log(Protocol.isDegraded({ "x-sluice-degraded": "1" })) // prints: true
 * ```
 * @since 1.0.0
 * @category utils
 */
export const isDegraded = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  names: HeaderNames = Headers.defaultHeaderNames
): boolean => Headers.parseFlag(Headers.headerValue(headers[names.degraded]))

/**
 * Parses `x-sluice-criticality` with core's `Criticality.parse`: unknown values
 * give the fallback (default `CRITICAL`).
 *
 * @since 0.1.0
 * @category utils
 */
export const parseCriticality = (
  value: string | null | undefined,
  fallback?: Criticality.Criticality
): Criticality.Criticality => Criticality.parse(value, fallback)

/**
 * Parses an HTTP date (RFC 9110 §5.6.7: IMF-fixdate, or the obsolete rfc850-date
 * and asctime-date forms) to epoch milliseconds; `undefined` for anything else.
 * Exactly the grammar: names are case-sensitive, single spaces, a day that exists
 * in its month, second 60 for a leap second. An rfc850-date's two-digit year is
 * the latest year with those digits that is not more than 50 years after
 * `nowMillis` (so on 2026-01-01 `-70` is 2070 and `-80` is 1980); without
 * `nowMillis` it is read against 2000-01-01.
 *
 * @example
 * ```ts
 * import { Protocol } from "@sluice/http"
 *
 * console.log(Protocol.parseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT")) // prints: 784111777000
 * console.log(Protocol.parseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT", Date.UTC(2026, 0, 1))) // prints: 784111777000
 * console.log(Protocol.parseHttpDate("sun, 06 nov 1994 08:49:37 gmt")) // prints: undefined
 * ```
 * @since 0.1.0
 * @category utils
 */
export const parseHttpDate: (value: string, nowMillis?: number) => number | undefined = HttpDate.parse

/**
 * Parses `Retry-After` (RFC 9110 §10.2.3: delay-seconds, `1*DIGIT` only — no
 * sign, no fraction — or an HTTP date relative to `nowMillis`, see
 * {@link parseHttpDate}) into a delay, clamped to `[0, max]`; `None` when absent
 * or malformed.
 *
 * @example
 * ```ts
 * import { Protocol } from "@sluice/http"
 *
 * console.log(String(Protocol.parseRetryAfterAt("3", 0))) // prints: some(3000 millis)
 * console.log(String(Protocol.parseRetryAfterAt("Thu, 01 Jan 1970 00:00:05 GMT", 1000))) // prints: some(4000 millis)
 * console.log(String(Protocol.parseRetryAfterAt("soon", 0))) // prints: none()
 * ```
 * @since 0.1.0
 * @category utils
 */
export const parseRetryAfterAt: (
  value: string | null | undefined,
  nowMillis: number,
  max?: Duration.Input
) => Option.Option<Duration.Duration> = internal.parseRetryAfter

/**
 * Parses `Retry-After`, reading "now" from Effect's `Clock`.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseRetryAfter = (
  value: string | null | undefined,
  max?: Duration.Input
): Effect.Effect<Option.Option<Duration.Duration>> =>
  Effect.map(Clock.currentTimeMillis, (now) => internal.parseRetryAfter(value, now, max))

/**
 * Formats a delay as `Retry-After` delay-seconds, rounded up (a positive delay
 * is at least `"1"`); zero or negative is `"0"`, and an infinite or longer
 * delay than a day is `"86400"` (delay-seconds cannot say "never": send
 * `x-sluice-dont-retry` for that, as `Middleware.errorResponse` does).
 *
 * @example
 * ```ts
 * import { Protocol } from "@sluice/http"
 *
 * console.log(Protocol.formatRetryAfter("1500 millis")) // prints: 2
 * ```
 * @since 0.1.0
 * @category utils
 */
export const formatRetryAfter: (duration: Duration.Input) => string = internal.formatRetryAfter

/**
 * One quota tier as the rate-limit headers describe it.
 *
 * @since 0.1.0
 * @category models
 */
export interface RateLimitTier {
  readonly name: string
  readonly limit: number
  readonly window?: Duration.Input | undefined
  readonly remaining: number
  readonly reset?: Duration.Input | undefined
}

/**
 * Formats `RateLimit-Policy` per the IETF rate-limit headers draft:
 * `"spike";q=20;w=1, "count";q=5000;w=3600`.
 *
 * @example
 * ```ts
 * import { Protocol } from "@sluice/http"
 *
 * console.log(Protocol.formatRateLimitPolicy([{ name: "spike", limit: 20, window: "1 second", remaining: 3 }])) // prints: "spike";q=20;w=1
 * ```
 * @since 0.1.0
 * @category utils
 */
export const formatRateLimitPolicy: (tiers: ReadonlyArray<RateLimitTier>) => string =
  internal.formatRateLimitPolicy

/**
 * Formats `RateLimit` per the IETF rate-limit headers draft:
 * `"spike";r=0;t=1` (remaining units and seconds until reset).
 *
 * @since 0.1.0
 * @category utils
 */
export const formatRateLimit: (tiers: ReadonlyArray<RateLimitTier>) => string = internal.formatRateLimit

/**
 * One parsed item of a `RateLimit` or `RateLimit-Policy` header.
 *
 * @since 0.1.0
 * @category models
 */
export interface RateLimitItem extends RateLimit.Item {}

/**
 * Parses a `RateLimit` or `RateLimit-Policy` header leniently; malformed items are
 * skipped.
 *
 * @example
 * ```ts
 * import { Protocol } from "@sluice/http"
 *
 * console.log(Protocol.parseRateLimit("\"spike\";r=0;t=1")) // prints: [ { name: 'spike', params: { r: 0, t: 1 } } ]
 * ```
 * @since 0.1.0
 * @category utils
 */
export const parseRateLimit: (value: string | null | undefined) => ReadonlyArray<RateLimitItem> =
  RateLimit.parse

/**
 * Reads one header value from a `Headers` record of `effect/http` (first value if repeated).
 *
 * @since 0.1.0
 * @category utils
 */
export const headerValue: (value: string | ReadonlyArray<string> | null | undefined) => string | undefined =
  Headers.headerValue

/**
 * A number in an error body: JSON cannot hold `Infinity`, `-Infinity` or `NaN`,
 * so they are these strings.
 *
 * @since 0.2.0
 * @category models
 */
export type PortableNumber = KernelErrorBody.PortableNumber

/**
 * What a `DontRetry` in an error body may wrap: any Sluice error but another
 * `DontRetry`. Durations are plain milliseconds in fields named `…Ms`.
 *
 * @since 0.2.0
 * @category models
 */
export type ErrorBodyCause = KernelErrorBody.CauseJson

/**
 * The JSON of an error response, as {@link formatErrorBody} writes it:
 * `{ "error": { "_tag": ..., ...fields } }`. Durations are plain milliseconds in
 * fields named `…Ms` (`retryAfterMs`); a number JSON cannot hold (an infinite
 * `retryAfterMs` or `halfOpenAt`) is the string `"Infinity"`. Per tag:
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
 * @category models
 */
export interface ErrorBody extends KernelErrorBody.ErrorBody {}

/**
 * Encodes a Sluice error as the body of its error response (what
 * `Middleware.errorResponse` sends). Not sent: `origin` (to the reader every
 * error in a response is the server's), `QuotaExceeded.client` (the caller knows
 * who it is, and the id a tier is known by at the tier below must not travel to
 * the tiers above), and a `DontRetry` cause that is not a Sluice error, which is
 * sent as an `Overloaded` whose reason is its tag (a timeout, a transport error:
 * its message may name the tiers behind the server).
 *
 * @example
 * ```ts
 * import { Errors } from "@sluice/core"
 * import { Protocol } from "@sluice/http"
 * import { Duration } from "effect"
 *
 * console.log(JSON.stringify(Protocol.formatErrorBody(new Errors.Overloaded({ reason: "busy", retryAfter: Duration.millis(1500) })))) // prints: {"error":{"_tag":"Overloaded","reason":"busy","retryAfterMs":1500}}
 * ```
 * @since 0.2.0
 * @category utils
 */
export const formatErrorBody: (error: Errors.SluiceError) => ErrorBody = internal.formatErrorBody

/**
 * Decodes an error body written by {@link formatErrorBody} (its text, or the
 * parsed JSON) into the same typed error; `None` for any other body (a foreign
 * server's, an unknown tag, a missing or mistyped field). Total: never throws.
 * Strings longer than 1024 characters are cut; a `DontRetry` reason this version
 * does not know reads as `"server"`.
 *
 * @example
 * ```ts
 * import { Protocol } from "@sluice/http"
 * import { Option } from "effect"
 *
 * const parsed = Protocol.parseErrorBody(`{"error":{"_tag":"Overloaded","reason":"busy","retryAfterMs":1500}}`)
 * // the error as a Sluice server sent it
 * if (Option.isSome(parsed)) console.log(JSON.stringify(Protocol.formatErrorBody(parsed.value)))
 * // prints: {"error":{"_tag":"Overloaded","reason":"busy","retryAfterMs":1500}}
 * console.log(Option.isNone(Protocol.parseErrorBody("Service Unavailable"))) // prints: true
 * ```
 * @since 0.2.0
 * @category utils
 */
export const parseErrorBody: (body: unknown) => Option.Option<Errors.SluiceError> = internal.parseErrorBody

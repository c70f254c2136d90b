/**
 * The error algebra: who may retry what.
 *
 * Every failure a Sluice policy produces is a Schema `TaggedError` (Schema v4), so it can be
 * yielded in `Effect.gen`, encoded to JSON, cross an HTTP hop, and be decoded again on the
 * other side.
 *
 * | error | retryable |
 * |---|---|
 * | `Overloaded` | yes, by the layer immediately above |
 * | `QuotaExceeded` | only after `retryAfter` |
 * | `Throttled` | no |
 * | `CircuitOpen` | no (at this layer) |
 * | `DontRetry` | never, at any layer |
 *
 * **Details**
 *
 * - The encoded form of each error is JSON: `Schema.encodeSync(Errors.SluiceError)` gives a value
 *   `JSON.stringify` keeps whole. Durations encode as `{ _tag: "Millis", value }` (or
 *   `{ _tag: "Infinity" }`), and non-finite numbers (`QuotaExceeded.limit`, `CircuitOpen.halfOpenAt`)
 *   as the strings `"Infinity"`, `"-Infinity"`, `"NaN"` ({@link PortableNumber}).
 * - `origin` defaults to `"remote"`, both when constructing and when decoding.
 *
 * **Gotchas**
 *
 * - A `DontRetry` whose `cause` is not a Sluice error encodes it as a defect
 *   (`Schema.Defect()`): an `Error` comes back as an `Error` with its name and message, not
 *   as an instance of its class.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import * as Outcome from "@sluice/kernel/outcome/Outcome"

/**
 * The symbol an error carries (set to `true`) to declare itself retryable, e.g. a
 * transport error. See {@link markRetryable}.
 *
 * @since 0.1.0
 * @category symbols
 */
export const RetryableTypeId: unique symbol = Symbol.for("@sluice/core/Retryable") as any

// Marked by `markRetryable` on an error of the application's own: retryable although Sluice does not know its tag.
const isMarkedRetryable = (u: unknown): boolean =>
  Predicate.hasProperty(u, RetryableTypeId) && (u as any)[RetryableTypeId] === true

/**
 * @since 0.1.0
 * @category symbols
 */
export type RetryableTypeId = typeof RetryableTypeId

/**
 * An error that declares itself retryable through {@link RetryableTypeId}.
 *
 * @since 0.1.0
 * @category models
 */
export interface MarkedRetryable {
  readonly [RetryableTypeId]: true
}

/**
 * A number that survives JSON: `Infinity`, `-Infinity` and `NaN` (which
 * `JSON.stringify` turns into `null`) are encoded as strings.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PortableNumber: Schema.Codec<number, number | "Infinity" | "-Infinity" | "NaN"> = Schema.Union([
  Schema.Number,
  Schema.Literals(["Infinity", "-Infinity", "NaN"])
]).pipe(
  Schema.decodeTo(
    Schema.Number,
    SchemaTransformation.transform({
      decode: (value) => (typeof value === "number" ? value : Number(value)),
      encode: (value): number | "Infinity" | "-Infinity" | "NaN" =>
        Number.isNaN(value)
          ? "NaN"
          : value === Infinity
            ? "Infinity"
            : value === -Infinity
              ? "-Infinity"
              : value
    })
  )
)

/**
 * A `Duration` whose encoded form is JSON (`{ _tag: "Millis", value }`, `{ _tag: "Infinity" }`, …):
 * encoding an error gives a value `JSON.stringify` keeps whole, as with `PortableNumber`.
 */
const PortableDuration = Schema.toCodecJson(Schema.Duration)

/**
 * Where a refusal was decided: `"remote"` (a backend said it, e.g. a 503 or a 429
 * decoded from a response) or `"local"` (this process's own policy: its concurrency
 * limiter's queue, its load shedder, its pacer). A local refusal is never evidence
 * that a backend is overloaded: limit algorithms and throttles do not learn from
 * it, and retry policies do not retry it (see `Outcome`).
 *
 * @since 0.2.0
 * @category models
 */
export const Origin = Schema.Literals(["local", "remote"])

/**
 * @since 0.2.0
 * @category models
 */
export type Origin = typeof Origin.Type

// Missing when decoded or constructed: a backend's refusal, as errors written before `origin` existed were.
const origin = Origin.pipe(
  Schema.withDecodingDefaultType(Effect.succeed("remote" as const)),
  Schema.withConstructorDefault(Effect.succeed("remote" as const))
)

/**
 * A backend refused the work because it is busy: shed, concurrency limit, queue
 * full, or the server said 503. Retryable by the layer immediately above when it
 * came from a backend (`origin: "remote"`, the default); a refusal of this
 * process's own limiter or shedder carries `origin: "local"` and is not retried.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Errors } from "@sluice/core"
 * import { Duration } from "effect"
 *
 * const error = new Errors.Overloaded({ reason: "shed", retryAfter: Duration.seconds(1) })
 * ```
 * @since 0.1.0
 * @category errors
 */
export class Overloaded extends Schema.TaggedError<Overloaded>("@sluice/core/Overloaded")("Overloaded", {
  reason: Schema.String,
  retryAfter: Schema.optional(PortableDuration),
  origin
}) {
  override get message(): string {
    return `overloaded: ${this.reason}`
  }
}

/**
 * This caller is over its own quota. Carries the tier, its limit and remaining
 * units, and `retryAfter`; never retry blindly, only after `retryAfter`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Errors } from "@sluice/core"
 * import { Duration } from "effect"
 *
 * const error = new Errors.QuotaExceeded({ tier: "spike", limit: 20, remaining: 0, retryAfter: Duration.millis(50) })
 * ```
 * @since 0.1.0
 * @category errors
 */
export class QuotaExceeded extends Schema.TaggedError<QuotaExceeded>("@sluice/core/QuotaExceeded")(
  "QuotaExceeded",
  {
    tier: Schema.String,
    limit: PortableNumber,
    remaining: PortableNumber,
    retryAfter: PortableDuration,
    client: Schema.optional(Schema.String),
    origin
  }
) {
  override get message(): string {
    return `quota exceeded on tier "${this.tier}" (limit ${this.limit})`
  }
}

/**
 * Refused locally by a client-side throttle; the work never reached the network.
 * Not retryable.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Errors } from "@sluice/core"
 *
 * const error = new Errors.Throttled({ key: "api.example.com" })
 * ```
 * @since 0.1.0
 * @category errors
 */
export class Throttled extends Schema.TaggedError<Throttled>("@sluice/core/Throttled")("Throttled", {
  key: Schema.String,
  probability: Schema.optional(Schema.Number)
}) {
  override get message(): string {
    return `throttled locally for "${this.key}"`
  }
}

/**
 * A circuit breaker is open. `halfOpenAt` is the epoch millisecond (from Effect's
 * `Clock`) at which it lets probes through. Not retryable at this layer.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Errors } from "@sluice/core"
 * import { Duration } from "effect"
 *
 * const error = new Errors.CircuitOpen({ name: "redis", halfOpenAt: 0, retryAfter: Duration.seconds(5) })
 * ```
 * @since 0.1.0
 * @category errors
 */
export class CircuitOpen extends Schema.TaggedError<CircuitOpen>("@sluice/core/CircuitOpen")("CircuitOpen", {
  name: Schema.String,
  halfOpenAt: PortableNumber,
  retryAfter: PortableDuration
}) {
  override get message(): string {
    return `circuit "${this.name}" is open`
  }
}

/**
 * Why a failure became terminal: attempts or budget spent by a lower layer, the
 * server said "don't retry", the error was never retryable, this process refused
 * the work itself (`"refused"`: its own limiter or shedder, never retried), or the
 * call's own deadline ran out (`"timeout"`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const DontRetryReason = Schema.Literals([
  "attempts",
  "budget",
  "server",
  "not-retryable",
  "refused",
  "timeout"
])

/**
 * @since 0.1.0
 * @category errors
 */
export type DontRetryReason = typeof DontRetryReason.Type

/**
 * Terminal: a lower layer already retried, ran out of budget, or the server said
 * "don't retry". Wraps the cause. Never retried, at any layer.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Errors } from "@sluice/core"
 *
 * const error = new Errors.DontRetry({
 *   reason: "attempts",
 *   attempts: 3,
 *   cause: new Errors.Overloaded({ reason: "server" })
 * })
 * ```
 * @since 0.1.0
 * @category errors
 */
export class DontRetry extends Schema.TaggedError<DontRetry>("@sluice/core/DontRetry")("DontRetry", {
  reason: DontRetryReason,
  attempts: Schema.optional(Schema.Number),
  cause: Schema.optional(Schema.Union([Overloaded, QuotaExceeded, Throttled, CircuitOpen, Schema.Defect()]))
}) {
  override get message(): string {
    return `don't retry (${this.reason})`
  }
}

/**
 * Any Sluice error.
 *
 * @since 0.1.0
 * @category errors
 */
export type SluiceError = Overloaded | QuotaExceeded | Throttled | CircuitOpen | DontRetry

/**
 * A schema for any Sluice error, for encoding to and decoding from JSON.
 *
 * @example
 * ```ts
 * import { Errors } from "@sluice/core"
 * import { Schema } from "effect"
 *
 * const encode = Schema.encodeSync(Errors.SluiceError)
 * const json = JSON.stringify(encode(new Errors.Throttled({ key: "a" })))
 * const back = Schema.decodeUnknownSync(Errors.SluiceError)(JSON.parse(json))
 * console.log(json) // prints: {"_tag":"Throttled","key":"a"}
 * console.log(back instanceof Errors.Throttled, back._tag) // prints: true Throttled
 * ```
 * @since 0.1.0
 * @category schemas
 */
export const SluiceError = Schema.Union([Overloaded, QuotaExceeded, Throttled, CircuitOpen, DontRetry])

/**
 * The errors that a retry policy may retry: `Overloaded`, `QuotaExceeded`,
 * Effect's `Cause.TimeoutError` (what `Effect.timeout` fails with), and any error marked
 * with {@link RetryableTypeId}.
 *
 * @since 0.1.0
 * @category errors
 */
export type Retryable = Overloaded | QuotaExceeded | Cause.TimeoutError | MarkedRetryable

/**
 * Removes the retryable errors from an error union: what is left once a retry
 * policy has turned them into `DontRetry`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — a type, checked by the compiler only
 * import type { Errors } from "@sluice/core"
 *
 * type E = Errors.NonRetryable<Errors.Overloaded | Errors.Throttled> // Errors.Throttled
 * ```
 * @since 0.1.0
 * @category models
 */
export type NonRetryable<E> = Exclude<E, Retryable>

/**
 * The retryable part of an error union.
 *
 * @since 0.1.0
 * @category errors
 */
export type RetryablePart<E> = Extract<E, Retryable>

/**
 * A refinement: is this error retryable by the layer directly above?
 * `DontRetry`, `Throttled`, `CircuitOpen` and local refusals (`origin: "local"`)
 * are not.
 *
 * @example
 * ```ts
 * import { Errors } from "@sluice/core"
 *
 * console.log(Errors.isRetryable(new Errors.Overloaded({ reason: "shed" }))) // prints: true
 * console.log(Errors.isRetryable(new Errors.Throttled({ key: "a" }))) // prints: false
 * ```
 * @since 0.1.0
 * @category guards
 */
export const isRetryable: <E>(error: E) => error is Extract<E, Retryable> = ((u: unknown): boolean =>
  Outcome.isRetryableError(u, Cause.isTimeoutError(u) || isMarkedRetryable(u))) as any

/**
 * Marks an error object as retryable (e.g. a transport error), returning it.
 *
 * @example
 * ```ts
 * import { Errors } from "@sluice/core"
 *
 * const e = Errors.markRetryable(new Error("socket hang up"))
 * console.log(Errors.isRetryable(e)) // prints: true
 * ```
 * @since 0.1.0
 * @category utils
 */
export const markRetryable = <E extends object>(error: E): E & MarkedRetryable => {
  Object.defineProperty(error, RetryableTypeId, { value: true, enumerable: false })
  return error as E & MarkedRetryable
}

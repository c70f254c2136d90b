/**
 * Schema-validated options shared by every Sluice constructor.
 *
 * Every policy takes its options through a Schema, so a bad value (a negative
 * window, `NaN`, a ratio outside `[0, 1]`) fails at construction with a message
 * that names the field instead of misbehaving later.
 *
 * **Details**
 *
 * - The checks are `@sluice/kernel/options/Field`'s: each schema here is a Schema v4
 *   codec with the check as a filter whose message is the check's, so every Sluice
 *   binding accepts and refuses the same values in the same words.
 * - A duration option is given as any `Duration.Input` (millis, a `Duration`, a bigint of
 *   nanos, `"2 minutes"`, `[seconds, nanos]`, `{ seconds: 2 }`) and decoded to a `Duration`;
 *   a negative or `NaN` one is refused as written.
 * - The message of {@link InvalidOptions} has one layout on every constructor (the kernel's
 *   `Field.describe`): `"<Module>: invalid options"`, then a line per field at fault,
 *   `field: problem`, e.g. `consecutiveFailures: expected a positive integer, got 0`.
 * - A key the options' schema does not declare is refused (`factor: is not an option`): a
 *   misspelt or removed option, or a key a `Config` source carries for something else, is
 *   reported rather than dropped.
 * - An option with a default is a `Schema.withDecodingDefaultType` field: missing or
 *   `undefined`, it decodes to the default.
 *
 * **Example** (Validating a constructor's options)
 *
 * ```ts
 * import { Options } from "@sluice/core"
 * import { Duration, Effect, Schema } from "effect"
 *
 * const PoolOptions = Schema.Struct({
 *   size: Options.PositiveInt,
 *   idle: Options.PositiveDuration.pipe(Schema.withDecodingDefaultType(Effect.succeed(Duration.seconds(30))))
 * })
 * const decodePool = Options.decode("Pool", PoolOptions)
 *
 * const pool = decodePool({ size: 4 }) // Effect<{ size: 4, idle: 30 seconds }, InvalidOptions>
 * const bad = decodePool({ size: 0 }) // fails: "Pool: invalid options\nsize: expected a positive integer, got 0"
 * const typo = decodePool(JSON.parse(`{ "size": 4, "idel": "1 minute" }`)) // fails: "Pool: invalid options\nidel: is not an option"
 * ```
 *
 * @since 0.1.0
 */
import type * as Field from "@sluice/kernel/options/Field"
import type * as Cause from "effect/Cause"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as internal from "./internal/options.js"

/**
 * Raised when options given to a Sluice constructor do not decode. The message
 * names the module and the offending field.
 *
 * @example
 * ```ts
 * import { Options } from "@sluice/core"
 * import { Effect, Schema } from "effect"
 *
 * const Opts = Schema.Struct({ ratio: Options.Ratio })
 * const program = Options.decode("Example", Opts)({ ratio: 2 }) // fails with InvalidOptions
 * Effect.runPromise(Effect.flip(program)).then((error) => console.log(error.message))
 * // prints: Example: invalid options
 * // prints: ratio: expected a ratio in [0, 1], got 2
 * ```
 * @since 0.1.0
 * @category schemas
 */
export const InvalidOptions: InvalidOptionsConstructor = internal.InvalidOptions

/**
 * The error: `_tag` `"InvalidOptions"`, the `module` that rejected the options and a
 * `message` naming the field. Yieldable in `Effect.gen` like every tagged error.
 *
 * @since 0.1.0
 * @category errors
 */
export interface InvalidOptions extends Cause.YieldableError {
  readonly _tag: "InvalidOptions"
  readonly module: string
  readonly message: string
}

/**
 * The constructor of {@link InvalidOptions} (also usable with `instanceof`).
 *
 * @since 0.2.0
 * @category errors
 */
export interface InvalidOptionsConstructor {
  new (args: { readonly module: string; readonly message: string }): InvalidOptions
  readonly prototype: InvalidOptions
}

/**
 * A duration given as milliseconds, a `Duration`, or a string such as `"2 minutes"`,
 * decoded to a `Duration`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const DurationInput: Schema.Codec<Duration.Duration, Duration.Input> = internal.DurationInput

/**
 * A strictly positive, finite duration.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PositiveDuration: Schema.Codec<Duration.Duration, Duration.Input> = internal.PositiveDuration

/**
 * A duration that is zero or positive and finite.
 *
 * @since 0.1.0
 * @category schemas
 */
export const NonNegativeDuration: Schema.Codec<Duration.Duration, Duration.Input> =
  internal.NonNegativeDuration

/**
 * A finite number in `[0, 1]`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Ratio: Schema.Codec<number> = internal.Ratio

/**
 * A finite number greater than zero.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PositiveNumber: Schema.Codec<number> = internal.PositiveNumber

/**
 * An integer greater than zero.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PositiveInt: Schema.Codec<number> = internal.PositiveInt

/**
 * An integer greater than or equal to zero.
 *
 * @since 0.1.0
 * @category schemas
 */
export const NonNegativeInt: Schema.Codec<number> = internal.NonNegativeInt

/**
 * A finite number greater than or equal to zero.
 *
 * @since 0.1.0
 * @category schemas
 */
export const NonNegativeNumber: Schema.Codec<number> = internal.NonNegativeNumber

type FieldSchema<F> = F extends { readonly duration: true }
  ? Schema.Codec<Duration.Duration, Duration.Input>
  : Schema.Codec<number>

/**
 * The Schema fields of a kernel option spec, one property per field (see {@link fields}).
 *
 * @since 0.2.0
 * @category schemas
 */
export type Fields<S extends Field.Spec<Record<string, number | undefined>>> = {
  readonly [K in keyof S]: S[K] extends { readonly fallback: { readonly value: number } }
    ? Schema.withDecodingDefaultType<FieldSchema<S[K]>>
    : S[K] extends { readonly fallback: { readonly value: undefined } }
      ? Schema.optional<FieldSchema<S[K]>>
      : FieldSchema<S[K]>
}

/**
 * The Schema fields of an option spec of `@sluice/kernel` (its checks and defaults): a field's
 * check becomes a filter whose message is the check's, a duration is decoded from any
 * `Duration.Input` and checked in milliseconds, and a default fills in a missing field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Options } from "@sluice/core"
 * import * as Field from "@sluice/kernel/options/Field"
 * import { Schema } from "effect"
 *
 * const Opts = Schema.Struct(Options.fields({ window: Field.duration(Field.required<number>(Field.positiveDuration)) }))
 * ```
 * @since 0.2.0
 * @category schemas
 */
export const fields: <S extends Field.Spec<Record<string, number | undefined>>>(spec: S) => Fields<S> =
  internal.fields

/**
 * Decodes options, failing with {@link InvalidOptions} whose message names the field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Options } from "@sluice/core"
 * import { Schema } from "effect"
 *
 * const decode = Options.decode("RollingCounter", Schema.Struct({ buckets: Options.PositiveInt }))
 * ```
 * @since 0.1.0
 * @category utils
 */
export const decode: <A, I>(
  module: string,
  schema: Schema.Codec<A, I>
) => (input: I) => Effect.Effect<A, InvalidOptions> = internal.decode

/**
 * Synchronous variant of {@link decode}: throws {@link InvalidOptions}.
 *
 * @since 0.1.0
 * @category utils
 */
export const decodeSync: <A, I>(module: string, schema: Schema.Codec<A, I>) => (input: I) => A =
  internal.decodeSync

/**
 * Variant of {@link decode} that answers a `Result`: never throws, never needs running.
 *
 * @since 1.0.0
 * @category utils
 */
export const decodeResult: <A, I>(
  module: string,
  schema: Schema.Codec<A, I>
) => (input: I) => Result.Result<A, InvalidOptions> = internal.decodeResult

/**
 * An {@link InvalidOptions} for the kernel's issues (`Field.Issue`: a field's path and what is
 * wrong), worded in the one layout every constructor uses (`Field.describe`): for a check a
 * schema cannot express.
 *
 * @example
 * ```ts
 * import { Options } from "@sluice/core"
 *
 * const error = Options.invalid("Pool", [{ path: ["size"], message: "must not exceed max" }])
 * console.log(error.message)
 * // prints: Pool: invalid options
 * // prints: size: must not exceed max
 * ```
 *
 * @since 1.0.0
 * @category errors
 */
export const invalid: (module: string, issues: ReadonlyArray<Field.Issue>) => InvalidOptions =
  internal.invalid

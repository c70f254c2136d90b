/**
 * Schema-validated options shared by every Sluice constructor.
 *
 * Every policy takes its options through a Schema, so a bad value (a negative
 * window, `NaN`, a ratio outside `[0, 1]`) fails at construction with a message
 * that names the field instead of misbehaving later.
 *
 * @since 0.1.0
 */
import type * as Field from "@sluice/kernel/options/Field"
import type * as Cause from "effect/Cause"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
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
export const DurationInput: Schema.Schema<Duration.Duration, Duration.DurationInput> = internal.DurationInput

/**
 * A strictly positive, finite duration.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PositiveDuration: Schema.Schema<Duration.Duration, Duration.DurationInput> =
  internal.PositiveDuration

/**
 * A duration that is zero or positive and finite.
 *
 * @since 0.1.0
 * @category schemas
 */
export const NonNegativeDuration: Schema.Schema<Duration.Duration, Duration.DurationInput> =
  internal.NonNegativeDuration

/**
 * A finite number in `[0, 1]`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Ratio: Schema.Schema<number> = internal.Ratio

/**
 * A finite number greater than zero.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PositiveNumber: Schema.Schema<number> = internal.PositiveNumber

/**
 * An integer greater than zero.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PositiveInt: Schema.Schema<number> = internal.PositiveInt

/**
 * An integer greater than or equal to zero.
 *
 * @since 0.1.0
 * @category schemas
 */
export const NonNegativeInt: Schema.Schema<number> = internal.NonNegativeInt

/**
 * A finite number greater than or equal to zero.
 *
 * @since 0.1.0
 * @category schemas
 */
export const NonNegativeNumber: Schema.Schema<number> = internal.NonNegativeNumber

type FieldSchema<F> = F extends { readonly duration: true }
  ? Schema.Schema<Duration.Duration, Duration.DurationInput>
  : Schema.Schema<number>

/**
 * The Schema fields of a kernel option spec, one property per field (see {@link fields}).
 *
 * @since 0.2.0
 * @category schemas
 */
export type Fields<S extends Field.Spec<Record<string, number | undefined>>> = {
  readonly [K in keyof S]: S[K] extends { readonly fallback: { readonly value: number } }
    ? Schema.optionalWith<FieldSchema<S[K]>, { default: () => Schema.Schema.Type<FieldSchema<S[K]>> }>
    : S[K] extends { readonly fallback: { readonly value: undefined } }
      ? Schema.optional<FieldSchema<S[K]>>
      : FieldSchema<S[K]>
}

/**
 * The Schema fields of an option spec of `@sluice/kernel` (its checks and defaults): a field's
 * check becomes a filter whose message is the check's, a duration is decoded from any
 * `Duration.DurationInput` and checked in milliseconds, and a default fills in a missing field.
 *
 * @example
 * ```ts
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
  schema: Schema.Schema<A, I>
) => (input: I) => Effect.Effect<A, InvalidOptions> = internal.decode as any

/**
 * Synchronous variant of {@link decode}: throws {@link InvalidOptions}.
 *
 * @since 0.1.0
 * @category utils
 */
export const decodeSync: <A, I>(module: string, schema: Schema.Schema<A, I>) => (input: I) => A =
  internal.decodeSync

/**
 * Variant of {@link decode} that answers an `Either`: never throws, never needs running.
 *
 * @since 0.2.0
 * @category utils
 */
export const decodeEither: <A, I>(
  module: string,
  schema: Schema.Schema<A, I>
) => (input: I) => Either.Either<A, InvalidOptions> = internal.decodeEither

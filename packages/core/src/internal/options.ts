import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import * as Field from "@sluice/kernel/options/Field"
import type { Fields } from "../Options.js"

/** @internal */
export class InvalidOptions extends Schema.TaggedError<InvalidOptions>("@sluice/core/InvalidOptions")(
  "InvalidOptions",
  { module: Schema.String, message: Schema.String }
) {}

const isPlainObject = (u: unknown): boolean => {
  if (typeof u !== "object" || u === null) return false
  const proto = Object.getPrototypeOf(u)
  return proto === Object.prototype || proto === null
}

// The shapes of `Duration.Input` (a `Duration`, millis, a bigint of nanos, a string, a
// `[seconds, nanos]` pair, a `{ seconds, … }` object); a string that does not read as a duration
// is refused by the decoding below, with the message naming what was given.
const isInputShape = (u: unknown): u is Duration.Input =>
  typeof u === "number" ||
  typeof u === "string" ||
  typeof u === "bigint" ||
  Duration.isDuration(u) ||
  (Array.isArray(u) && u.length === 2 && typeof u[0] === "number" && typeof u[1] === "number") ||
  isPlainObject(u)

const Input = Schema.declare(isInputShape, { expected: "a duration" })

/** @internal */
export const DurationInput: Schema.Codec<Duration.Duration, Duration.Input> = Input.pipe(
  Schema.decodeTo(
    Schema.Duration,
    SchemaTransformation.transformEffect({
      decode: (input) => {
        const problem = Field.durationInput(input)
        const decoded = problem === undefined ? Duration.fromInput(input) : Option.none()
        return Option.isSome(decoded)
          ? Effect.succeed(decoded.value)
          : Effect.fail(
              new SchemaIssue.InvalidValue(
                { message: problem ?? `expected a duration, got ${String(input)}` },
                input
              )
            )
      },
      encode: (duration: Duration.Duration) => Effect.succeed<Duration.Input>(duration)
    })
  )
)

/** A field's check as a filter whose message is the check's. */
const refined = <A, I>(schema: Schema.Codec<A, I>, check: Field.Check, read: (a: A) => number) =>
  schema.check(Schema.makeFilter<A>((a) => check(read(a))))

const duration = (check: Field.Check): Schema.Codec<Duration.Duration, Duration.Input> =>
  refined(DurationInput, check, Duration.toMillis)
const number = (check: Field.Check): Schema.Codec<number> => refined(Schema.Number, check, identity)

/** @internal */
export const PositiveDuration = duration(Field.positiveDuration)

/** @internal */
export const NonNegativeDuration = duration(Field.finiteDuration)

/** @internal */
export const Ratio = number(Field.ratio)

/** @internal */
export const PositiveNumber = number(Field.positive)

/** @internal */
export const NonNegativeNumber = number(Field.nonNegative)

/** @internal */
export const PositiveInt = number(Field.positiveInt)

/** @internal */
export const NonNegativeInt = number(Field.nonNegativeInt)

const propertyOf = ({
  check,
  duration: isDuration,
  fallback
}: Field.Field<number | undefined>): Schema.Top => {
  if (isDuration === true) {
    const schema = duration(check)
    if (fallback === undefined) return schema
    const value = fallback.value
    return value === undefined
      ? Schema.optional(schema)
      : schema.pipe(Schema.withDecodingDefaultType(Effect.succeed(Duration.millis(value))))
  }
  const schema = number(check)
  if (fallback === undefined) return schema
  const value = fallback.value
  return value === undefined
    ? Schema.optional(schema)
    : schema.pipe(Schema.withDecodingDefaultType(Effect.succeed(value)))
}

/** @internal */
export const fields = <S extends Field.Spec<Record<string, number | undefined>>>(spec: S): Fields<S> =>
  Object.fromEntries(Object.entries(spec).map(([name, field]) => [name, propertyOf(field)])) as Fields<S>

const toInvalid = (module: string, error: Schema.SchemaError) =>
  new InvalidOptions({ module, message: `${module}: invalid options\n${error.message}` })

/** @internal */
export const decode = <A, I>(module: string, schema: Schema.Codec<A, I>) => {
  const run = Schema.decodeEffect(schema)
  return (input: I): Effect.Effect<A, InvalidOptions> =>
    Effect.mapError(run(input), (e) => toInvalid(module, e))
}

/** @internal decodes to a `Result`, never throwing */
export const decodeResult = <A, I>(module: string, schema: Schema.Codec<A, I>) => {
  const run = Schema.decodeResult(schema)
  return (input: I): Result.Result<A, InvalidOptions> =>
    Result.mapError(run(input), (e) => toInvalid(module, e))
}

/** @internal */
export const decodeSync = <A, I>(module: string, schema: Schema.Codec<A, I>) => {
  const run = decodeResult(module, schema)
  return (input: I): A => Result.getOrThrowWith(run(input), identity)
}

/** @internal `make` (failing with `InvalidOptions`) and `unsafeMake` (throwing it) of a constructor */
export const constructors = <A, I, S>(
  module: string,
  schema: Schema.Codec<A, I>,
  build: (options: A) => S
) => {
  const decodeEffect = decode(module, schema)
  const decodeThrowing = decodeSync(module, schema)
  return {
    make: (options: I): Effect.Effect<S, InvalidOptions> => Effect.map(decodeEffect(options), build),
    unsafeMake: (options: I): S => build(decodeThrowing(options))
  }
}

/** @internal runs `f` at the current time of the running fiber's clock */
export const atNow = <A>(f: (now: number) => A): Effect.Effect<A> =>
  Effect.clockWith((clock) => Effect.sync(() => f(clock.currentTimeMillisUnsafe())))

import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Field from "@sluice/kernel/options/Field"
import type { Fields } from "../Options.js"

/** @internal */
export class InvalidOptions extends Schema.TaggedError<InvalidOptions>("@sluice/core/InvalidOptions")(
  "InvalidOptions",
  { module: Schema.String, message: Schema.String }
) {}

/** @internal */
export const DurationInput: Schema.Schema<Duration.Duration, Duration.DurationInput> = Schema.transformOrFail(
  Schema.Union(Schema.Number, Schema.String, Schema.DurationFromSelf, Schema.BigIntFromSelf),
  Schema.DurationFromSelf,
  {
    strict: true,
    decode: (input, _, ast) => {
      const problem = Field.durationInput(input)
      const decoded = problem === undefined ? Duration.decodeUnknown(input) : Option.none()
      return Option.isSome(decoded)
        ? ParseResult.succeed(decoded.value)
        : ParseResult.fail(
            new ParseResult.Type(ast, input, problem ?? `expected a duration, got ${String(input)}`)
          )
    },
    encode: (d) => ParseResult.succeed(d)
  }
) as any

/**
 * A field's check as a filter with the check's message; a failure of the schema refined (a
 * duration that does not decode) keeps its own.
 */
const refined = <A, I>(schema: Schema.Schema<A, I>, check: Field.Check, read: (a: A) => number) =>
  schema.pipe(
    Schema.filter((a) => check(read(a)) === undefined, {
      message: (issue) =>
        (issue._tag === "Refinement" && issue.kind === "Predicate" && check(read(issue.actual as A))) || ""
    })
  )

const duration = (check: Field.Check) => refined(DurationInput, check, Duration.toMillis)
const number = (check: Field.Check) => refined(Schema.Number, check, identity)

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

const propertyOf = ({ check, duration: isDuration, fallback }: Field.Field<number | undefined>) => {
  const schema: Schema.Schema<any, any> = isDuration === true ? duration(check) : number(check)
  if (fallback === undefined) return schema
  const value = fallback.value
  if (value === undefined) return Schema.optional(schema)
  return Schema.optionalWith(schema, {
    default: isDuration === true ? () => Duration.millis(value) : () => value
  })
}

/** @internal */
export const fields = <S extends Field.Spec<Record<string, number | undefined>>>(spec: S): Fields<S> =>
  Object.fromEntries(Object.entries(spec).map(([name, field]) => [name, propertyOf(field)])) as Fields<S>

const toInvalid = (module: string, error: ParseResult.ParseError) =>
  new InvalidOptions({
    module,
    message: `${module}: invalid options\n${ParseResult.TreeFormatter.formatErrorSync(error)}`
  })

/** @internal */
export const decode =
  <A, I>(module: string, schema: Schema.Schema<A, I>) =>
  (input: I): Effect.Effect<A, InvalidOptions> =>
    Effect.mapError(Schema.decode(schema)(input), (e) => toInvalid(module, e))

/** @internal decodes to an `Either`, never throwing */
export const decodeEither = <A, I>(module: string, schema: Schema.Schema<A, I>) => {
  const run = Schema.decodeEither(schema)
  return (input: I): Either.Either<A, InvalidOptions> =>
    Either.mapLeft(run(input), (e) => toInvalid(module, e))
}

/** @internal */
export const decodeSync = <A, I>(module: string, schema: Schema.Schema<A, I>) => {
  const run = decodeEither(module, schema)
  return (input: I): A => Either.getOrThrowWith(run(input), identity)
}

/** @internal `make` (failing with `InvalidOptions`) and `unsafeMake` (throwing it) of a constructor */
export const constructors = <A, I, S>(
  module: string,
  schema: Schema.Schema<A, I>,
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
  Effect.clockWith((clock) => Effect.sync(() => f(clock.unsafeCurrentTimeMillis())))

import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Rule from "@sluice/kernel/options/Rule"
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
      const problem = Rule.durationInput(input)
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

/** Each rule of a field as a filter with the rule's message. */
const refined = <A, I>(
  schema: Schema.Schema<A, I>,
  rules: ReadonlyArray<Rule.Rule>,
  read: (a: A) => number
) =>
  rules.reduce(
    (refinedSoFar, rule) =>
      refinedSoFar.pipe(
        Schema.filter((a) => rule.test(read(a)), { message: (issue) => rule.message(issue.actual) })
      ),
    schema
  )

const duration = (rules: ReadonlyArray<Rule.Rule>) => refined(DurationInput, rules, Duration.toMillis)
const number = (rules: ReadonlyArray<Rule.Rule>) => refined(Schema.Number, rules, identity)

/** @internal */
export const PositiveDuration = duration([Rule.positiveDuration])

/** @internal */
export const NonNegativeDuration = duration([Rule.finiteDuration])

/** @internal */
export const Ratio = number([Rule.ratio])

/** @internal */
export const PositiveNumber = number([Rule.positiveNumber])

/** @internal */
export const NonNegativeNumber = number([Rule.nonNegativeNumber])

/** @internal */
export const PositiveInt = number([Rule.positiveInt])

/** @internal */
export const NonNegativeInt = number([Rule.nonNegativeInt])

const schemaOf = (field: Rule.Field): Schema.Schema<any, any> =>
  field.type === "duration" ? duration(field.rules) : number(field.rules)

const propertyOf = (field: Rule.Field) => {
  const fallback = field.default
  if (fallback === undefined)
    return field.optional === true ? Schema.optional(schemaOf(field)) : schemaOf(field)
  const value = field.type === "duration" ? () => Duration.millis(fallback) : () => fallback
  return Schema.optionalWith(schemaOf(field), { default: value })
}

/** @internal */
export const fields = <S extends Rule.Spec>(spec: S): Fields<S> =>
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

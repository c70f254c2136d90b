import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/** @internal */
export class InvalidOptions extends Schema.TaggedError<InvalidOptions>("@sluice/core/InvalidOptions")(
  "InvalidOptions",
  { module: Schema.String, message: Schema.String }
) {}

const DurationInputFrom = Schema.Union(
  Schema.Number,
  Schema.String,
  Schema.DurationFromSelf,
  Schema.BigIntFromSelf
)

/** @internal */
export const DurationInput: Schema.Schema<Duration.Duration, Duration.DurationInput> = Schema.transformOrFail(
  DurationInputFrom,
  Schema.DurationFromSelf,
  {
    strict: true,
    decode: (input, _, ast) => {
      if (typeof input === "number" && !Number.isFinite(input) && input !== Infinity) {
        return ParseResult.fail(new ParseResult.Type(ast, input, "expected a duration, got NaN"))
      }
      // Effect reads a negative duration as zero; an option given one is a mistake, not "no wait".
      if (
        (typeof input === "number" && input < 0) ||
        (typeof input === "bigint" && input < BigInt(0)) ||
        (typeof input === "string" && input.trimStart().startsWith("-"))
      ) {
        return ParseResult.fail(
          new ParseResult.Type(ast, input, `expected a non-negative duration, got ${String(input)}`)
        )
      }
      return Option.match(Duration.decodeUnknown(input), {
        onNone: () =>
          ParseResult.fail(new ParseResult.Type(ast, input, `expected a duration, got ${String(input)}`)),
        onSome: ParseResult.succeed
      })
    },
    encode: (d) => ParseResult.succeed(d)
  }
) as any

/** @internal */
export const PositiveDuration = DurationInput.pipe(
  Schema.filter((d) => Duration.isFinite(d) && Duration.greaterThan(d, Duration.zero), {
    message: () => "expected a positive, finite duration"
  })
)

/** @internal */
export const NonNegativeDuration = DurationInput.pipe(
  Schema.filter((d) => Duration.isFinite(d), { message: () => "expected a finite duration" })
)

/** @internal */
export const Ratio = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && n >= 0 && n <= 1, {
    message: (issue) => `expected a ratio in [0, 1], got ${String(issue.actual)}`
  })
)

/** @internal */
export const PositiveNumber = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && n > 0, {
    message: (issue) => `expected a positive finite number, got ${String(issue.actual)}`
  })
)

/** @internal */
export const NonNegativeNumber = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && n >= 0, {
    message: (issue) => `expected a non-negative finite number, got ${String(issue.actual)}`
  })
)

/** @internal */
export const PositiveInt = Schema.Number.pipe(
  Schema.filter((n) => Number.isInteger(n) && n > 0, {
    message: (issue) => `expected a positive integer, got ${String(issue.actual)}`
  })
)

/** @internal */
export const NonNegativeInt = Schema.Number.pipe(
  Schema.filter((n) => Number.isInteger(n) && n >= 0, {
    message: (issue) => `expected a non-negative integer, got ${String(issue.actual)}`
  })
)

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

/** @internal */
export const decodeSync = <A, I>(module: string, schema: Schema.Schema<A, I>) => {
  const run = Schema.decodeEither(schema)
  return (input: I): A => {
    const result = run(input)
    if (Either.isLeft(result)) throw toInvalid(module, result.left)
    return result.right
  }
}

/** @internal decodes to an `Either`, never throwing */
export const decodeEither = <A, I>(module: string, schema: Schema.Schema<A, I>) => {
  const run = Schema.decodeEither(schema)
  return (input: I): Either.Either<A, InvalidOptions> =>
    Either.mapLeft(run(input), (e) => toInvalid(module, e))
}

import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
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

/** @internal The kernel's issues as one `InvalidOptions`, in the kernel's one layout. */
export const invalid = (module: string, issues: ReadonlyArray<Field.Issue>): InvalidOptions =>
  new InvalidOptions({ module, message: Field.describe(module, issues) })

const standardIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** A Schema failure as the kernel's issues: the field's path, and what is wrong with it. */
const issuesOf = (error: Schema.SchemaError): Array<Field.Issue> =>
  standardIssues(error.issue).issues.map((issue) => ({
    path: (issue.path ?? []).map((segment) =>
      String(typeof segment === "object" && segment !== null && "key" in segment ? segment.key : segment)
    ),
    message: issue.message
  }))

/**
 * The keys an options object of `schema` may have, read from the shape its users write (the
 * encoded side); `undefined` when that shape is not a plain struct (a record, a union with one),
 * whose keys are not checked.
 */
const declaredKeys = (schema: Schema.Top): ReadonlySet<string> | undefined => {
  const keysOf = (ast: SchemaAST.AST): Array<string> | undefined => {
    if (SchemaAST.isObjects(ast)) {
      return ast.indexSignatures.length === 0
        ? ast.propertySignatures.map((ps) => String(ps.name))
        : undefined
    }
    if (SchemaAST.isUnion(ast)) {
      const keys: Array<string> = []
      for (const member of ast.types) {
        if (!SchemaAST.isObjects(member)) continue
        const own = keysOf(member)
        if (own === undefined) return undefined
        keys.push(...own)
      }
      return keys
    }
    return undefined
  }
  const keys = keysOf(SchemaAST.toEncoded(schema.ast))
  return keys === undefined ? undefined : new Set(keys)
}

/** The keys of an options object that `schema` does not declare, as the kernel words them. */
const unknownKeysOf = (schema: Schema.Top) => {
  const known = declaredKeys(schema)
  return (input: unknown): Array<Field.Issue> =>
    known !== undefined && typeof input === "object" && input !== null ? Field.unknownKeys(input, known) : []
}

/**
 * @internal Decodes options with `schema`; a key the schema does not declare is an issue by the
 * kernel's rule (`Field.unknownKeys`), reported with the schema's own issues.
 */
export const decodeResult = <A, I>(module: string, schema: Schema.Codec<A, I>) => {
  const run = Schema.decodeResult(schema)
  const unknownIn = unknownKeysOf(schema)
  return (input: I): Result.Result<A, InvalidOptions> => {
    const unknown = unknownIn(input)
    const result = run(input)
    if (Result.isFailure(result))
      return Result.fail(invalid(module, [...unknown, ...issuesOf(result.failure)]))
    return unknown.length === 0 ? Result.succeed(result.success) : Result.fail(invalid(module, unknown))
  }
}

/** @internal As {@link decodeResult}, as an `Effect`. */
export const decode = <A, I>(module: string, schema: Schema.Codec<A, I>) => {
  const run = Schema.decodeEffect(schema)
  const unknownIn = unknownKeysOf(schema)
  return (input: I): Effect.Effect<A, InvalidOptions> =>
    Effect.suspend(() => {
      const unknown = unknownIn(input)
      const decoded = Effect.mapError(run(input), (e) => invalid(module, [...unknown, ...issuesOf(e)]))
      return unknown.length === 0 ? decoded : Effect.andThen(decoded, Effect.fail(invalid(module, unknown)))
    })
}

/** @internal */
export const decodeSync = <A, I>(module: string, schema: Schema.Codec<A, I>) => {
  const run = decodeResult(module, schema)
  return (input: I): A => Result.getOrThrowWith(run(input), identity)
}

/** @internal `make` (failing with `InvalidOptions`) and `makeUnsafe` (throwing it) of a constructor */
export const constructors = <A, I, S>(
  module: string,
  schema: Schema.Codec<A, I>,
  build: (options: A) => S
) => {
  const decodeEffect = decode(module, schema)
  const decodeThrowing = decodeSync(module, schema)
  return {
    make: (options: I): Effect.Effect<S, InvalidOptions> => Effect.map(decodeEffect(options), build),
    makeUnsafe: (options: I): S => build(decodeThrowing(options))
  }
}

/** @internal runs `f` at the current time of the running fiber's clock */
export const atNow = <A>(f: (now: number) => A): Effect.Effect<A> =>
  Effect.clockWith((clock) => Effect.sync(() => f(clock.currentTimeMillisUnsafe())))

/**
 * Option validation: each field of a configuration with its check (a range, a set of values, a
 * function) and its default, checked once when a policy is built. A bad value (a negative
 * window, `NaN`, a ratio outside `[0, 1]`) is reported as an {@link Issue} naming the field,
 * never thrown and never left to misbehave later, so every binding, on either Effect line,
 * accepts and refuses the same values and says why in the same words.
 *
 * A {@link Check} judges one value. A {@link Field} is one option: its check, its default, and
 * whether it is a duration. Durations are milliseconds here: a binding decodes the durations its
 * users write (`"2 seconds"`, a `Duration`) and checks the milliseconds; {@link durationInput}
 * is the check of the written form itself. A {@link Spec} is a configuration's fields: the
 * kernel {@link resolve}s it with its defaults, and a binding may turn it into its own schema.
 *
 * @since 0.2.0
 */

/**
 * A problem with a configuration: the field it names (`path`) and what is wrong. The shape
 * of a Schema filter issue, so a binding can report it as it is.
 *
 * @since 0.2.0
 */
export interface Issue {
  readonly path: Array<string>
  readonly message: string
}

/**
 * What is wrong with a value, or `undefined` when it is acceptable. `shown` names the value in
 * the message when the value checked was read from what the caller wrote (a duration's
 * milliseconds, reported as the duration given).
 *
 * @since 0.2.0
 */
export type Check = (value: unknown, shown?: string) => string | undefined

/**
 * One field: its {@link Check}, what a missing field (absent or `undefined`) becomes (without
 * `fallback` the field is required), and whether it is a duration in milliseconds (a binding
 * decodes its users' durations before the check).
 *
 * @since 0.2.0
 */
export interface Field<A> {
  readonly check: Check
  readonly fallback?: { readonly value: A } | undefined
  readonly duration?: boolean | undefined
}

/**
 * The fields of a configuration `C`: one {@link Field} per property.
 *
 * @since 0.2.0
 */
export type Spec<C> = { readonly [K in keyof C]-?: Field<C[K]> }

/**
 * A validated configuration, or every issue found.
 *
 * @since 0.2.0
 */
export type Result<C> =
  { readonly ok: true; readonly value: C } | { readonly ok: false; readonly issues: ReadonlyArray<Issue> }

const show = (value: unknown): string =>
  typeof value === "function"
    ? "a function"
    : typeof value === "string"
      ? JSON.stringify(value)
      : String(value)

/**
 * A check from a test and a description of what it expects.
 *
 * @since 0.2.0
 */
export const expecting =
  (test: (value: any) => boolean, expected: string): Check =>
  (value, shown) =>
    test(value) ? undefined : `expected ${expected}, got ${shown ?? show(value)}`

/**
 * The first problem any of `checks` finds, in order (a range, then a bound of its own).
 *
 * @since 0.2.0
 */
export const all =
  (...checks: ReadonlyArray<Check>): Check =>
  (value, shown) => {
    for (const check of checks) {
      const problem = check(value, shown)
      if (problem !== undefined) return problem
    }
    return undefined
  }

const isNumber = (n: unknown): n is number => typeof n === "number"
const isFiniteNumber = (n: unknown): n is number => Number.isFinite(n)

/** A finite number > 0. @since 0.2.0 */
export const positive = expecting((n) => isFiniteNumber(n) && n > 0, "a positive finite number")
/** A positive number; `Infinity` allowed (an unbounded maximum). @since 0.2.0 */
export const positiveOrInfinity = expecting((n) => isNumber(n) && n > 0, "a positive number")
/** A finite number ≥ 0. @since 0.2.0 */
export const nonNegative = expecting((n) => isFiniteNumber(n) && n >= 0, "a non-negative finite number")
/** @since 0.2.0 */
export const positiveInt = expecting((n) => Number.isInteger(n) && n > 0, "a positive integer")
/** @since 0.2.0 */
export const nonNegativeInt = expecting((n) => Number.isInteger(n) && n >= 0, "a non-negative integer")
/** A ratio in [0, 1]. @since 0.2.0 */
export const ratio = expecting((n) => isNumber(n) && n >= 0 && n <= 1, "a ratio in [0, 1]")
/**
 * A ratio in (0, 1]: a share of something that must not be nothing, or a smoothing factor,
 * where 1 keeps only the latest sample.
 *
 * @since 0.2.0
 */
export const positiveRatio = expecting((n) => isNumber(n) && n > 0 && n <= 1, "a ratio in (0, 1]")
/** A ratio strictly between 0 and 1 (a back-off ratio, a relative accuracy). @since 0.2.0 */
export const openRatio = expecting((n) => isNumber(n) && n > 0 && n < 1, "a ratio in (0, 1)")
/** A positive, finite duration in milliseconds. @since 0.2.0 */
export const positiveDuration = expecting((n) => isFiniteNumber(n) && n > 0, "a positive, finite duration")
/**
 * A finite duration in milliseconds, zero allowed (a negative one is refused as written, see
 * {@link durationInput}).
 *
 * @since 0.2.0
 */
export const finiteDuration = expecting((n) => isFiniteNumber(n) && n >= 0, "a finite duration")
/** @since 0.2.0 */
export const string = expecting((s) => typeof s === "string", "a string")

/**
 * One of the given values.
 *
 * @since 0.2.0
 */
export const oneOf = (...values: ReadonlyArray<string>): Check =>
  expecting((v) => values.includes(v), values.map((v) => JSON.stringify(v)).join(" or "))

/**
 * A function; `expected` says which (e.g. `"a function (key) => Limit"`).
 *
 * @since 0.2.0
 */
export const func = (expected: string): Check => expecting((f) => typeof f === "function", expected)

/**
 * The problem with a duration as written, before it is read: `NaN` (and `-Infinity`), and
 * anything negative (a number, a bigint of nanoseconds, a string such as `"-5 seconds"`). Effect
 * reads a negative duration as zero; an option given one is a mistake, not "no wait". `Infinity`
 * is a duration ({@link positiveDuration} and {@link finiteDuration} refuse it).
 *
 * @since 0.2.0
 */
export const durationInput: Check = (input) => {
  if (typeof input === "number" && !Number.isFinite(input) && input !== Infinity) {
    return "expected a duration, got NaN"
  }
  const negative =
    (typeof input === "number" && input < 0) ||
    (typeof input === "bigint" && input < BigInt(0)) ||
    (typeof input === "string" && input.trimStart().startsWith("-"))
  return negative ? `expected a non-negative duration, got ${String(input)}` : undefined
}

/**
 * A field that must be given.
 *
 * @since 0.2.0
 */
export const required = <A>(check: Check): Field<A> => ({ check })

/**
 * A field that may be missing (it stays `undefined`).
 *
 * @since 0.2.0
 */
export const optional = <A>(
  check: Check
): Field<A | undefined> & { readonly fallback: { readonly value: undefined } } => ({
  check,
  fallback: { value: undefined }
})

/**
 * A field whose missing value is `value`.
 *
 * @since 0.2.0
 */
export const withDefault = <A>(
  check: Check,
  value: A
): Field<A> & { readonly fallback: { readonly value: A } } => ({
  check,
  fallback: { value }
})

/**
 * A field of milliseconds that a binding's users give as durations.
 *
 * @since 0.2.0
 */
export const duration = <F extends Field<number | undefined>>(field: F): F & { readonly duration: true } => ({
  ...field,
  duration: true
})

/**
 * Issues of fields that must not decrease, given in order (e.g. `[minLimit, initial,
 * maxLimit]`): one per pair out of order, naming the lower field.
 *
 * @since 0.2.0
 */
export const orderIssues = (fields: ReadonlyArray<readonly [name: string, value: number]>): Array<Issue> => {
  const issues: Array<Issue> = []
  for (let i = 0; i + 1 < fields.length; i++) {
    const [lowName, low] = fields[i]!
    for (let j = i + 1; j < fields.length; j++) {
      const [highName, high] = fields[j]!
      if (low > high) {
        issues.push({ path: [lowName], message: `${lowName} (${low}) must not exceed ${highName} (${high})` })
      }
    }
  }
  return issues
}

/**
 * An issue per key of `input` that is not one of `known`: an option a constructor does not
 * declare is a mistake (a misspelling, an option from another version, a key a `Config` source
 * carries for something else), not something to drop in silence. Every own enumerable key
 * counts, even one whose value is `undefined`.
 *
 * @since 0.2.0
 */
export const unknownKeys = (input: object, known: Iterable<string>): Array<Issue> => {
  const declared = known instanceof Set ? (known as ReadonlySet<string>) : new Set(known)
  const issues: Array<Issue> = []
  for (const key of Object.keys(input)) {
    if (!declared.has(key)) issues.push({ path: [key], message: "is not an option" })
  }
  return issues
}

/**
 * The one layout of an invalid-options message, on every constructor and both Effect lines:
 * `module: invalid options`, then a line per issue, `path: message` (a nested field's path
 * joined with dots, as {@link orThrow} words it).
 *
 * @since 0.2.0
 */
export const describe = (module: string, issues: ReadonlyArray<Issue>): string =>
  [`${module}: invalid options`, ...issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`)].join(
    "\n"
  )

/**
 * Validates `input` field by field, fills in the defaults, then, when every field is
 * acceptable, applies `rules` across fields (e.g. `min ≤ max`). A key of `input` that `spec`
 * does not declare is an issue ({@link unknownKeys}): a binding that reads some options itself
 * (durations it decodes) passes the rest.
 *
 * @since 0.2.0
 */
export const resolve = <C>(
  spec: Spec<C>,
  input: object,
  rules?: (config: C) => ReadonlyArray<Issue>
): Result<C> => resolveFields(spec, input, rules, unknownKeys(input, Object.keys(spec)))

const resolveFields = <C>(
  spec: Spec<C>,
  input: object,
  rules: ((config: C) => ReadonlyArray<Issue>) | undefined,
  issues: Array<Issue>
): Result<C> => {
  const config: Record<string, unknown> = {}
  for (const name of Object.keys(spec)) {
    const field = (spec as Record<string, Field<unknown>>)[name]!
    const value = (input as Record<string, unknown>)[name]
    if (value === undefined) {
      if (field.fallback === undefined) issues.push({ path: [name], message: "is missing" })
      else if (field.fallback.value !== undefined) config[name] = field.fallback.value
    } else {
      const problem = field.check(value)
      if (problem === undefined) config[name] = value
      else issues.push({ path: [name], message: problem })
    }
  }
  if (issues.length === 0 && rules !== undefined) issues.push(...rules(config as C))
  return issues.length === 0 ? { ok: true, value: config as C } : { ok: false, issues }
}

/**
 * A validated configuration transformed (e.g. a derived default filled in); issues pass through.
 *
 * @since 0.2.0
 */
export const map = <A, B>(result: Result<A>, f: (a: A) => B): Result<B> =>
  result.ok ? { ok: true, value: f(result.value) } : result

/**
 * The issue of one value at `path`, or `undefined` when it is absent (a default applies) or
 * acceptable.
 *
 * @since 0.2.0
 */
export const field = (
  path: string | ReadonlyArray<string>,
  value: unknown,
  check: Check
): Issue | undefined => {
  if (value === undefined) return undefined
  const problem = check(value)
  return problem === undefined
    ? undefined
    : { path: typeof path === "string" ? [path] : [...path], message: problem }
}

/**
 * The issues of several values, each `[path, value, check]`; absent values are skipped.
 *
 * @since 0.2.0
 */
export const fields = (
  checks: ReadonlyArray<readonly [path: string | ReadonlyArray<string>, value: unknown, check: Check]>
): Array<Issue> => {
  const found: Array<Issue> = []
  for (const [path, value, check] of checks) {
    const issue = field(path, value, check)
    if (issue !== undefined) found.push(issue)
  }
  return found
}

const raise = (issue: Issue): never => {
  throw new RangeError(`${issue.path.join(".")}: ${issue.message}`)
}

/**
 * Throws a `RangeError` for the first issue (`path: message`), for a kernel constructor called
 * without a binding's check first; returns otherwise.
 *
 * @since 0.2.0
 */
export const orThrow = (issues: ReadonlyArray<Issue>): void => {
  const first = issues[0]
  if (first !== undefined) raise(first)
}

/**
 * {@link resolve}s `input`, or throws a `RangeError` for the first issue as {@link orThrow} does,
 * its field under `path` (a nested configuration's own name): for a kernel constructor, so it
 * refuses a missing field and fills in a default by the same rule a binding checks. It reads
 * its own fields of what may be a larger configuration (a constructor resolves its parts
 * one by one): other keys are left to the check of the whole, its binding's.
 *
 * @since 0.2.0
 */
export const resolveOrThrow = <C>(
  spec: Spec<C>,
  input: object,
  path: ReadonlyArray<string> = [],
  rules?: (config: C) => ReadonlyArray<Issue>
): C => {
  const result = resolveFields(spec, input, rules, [])
  if (result.ok) return result.value
  const first = result.issues[0]!
  return raise({ path: [...path, ...first.path], message: first.message })
}

/**
 * Option validation: each field of a configuration with its rule (a range, a set of values, a
 * function) and its default, checked once when a policy is built. A bad value is reported as an
 * {@link Issue} naming the field, never thrown, so every binding turns the same rule into its
 * own error (`InvalidOptions` in the Effect packages) and the rule is written once.
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
 * What is wrong with a value, or `undefined` when it is acceptable.
 *
 * @since 0.2.0
 */
export type Check = (value: unknown) => string | undefined

/**
 * One field: its {@link Check} and what a missing field (absent or `undefined`) becomes;
 * without `fallback` the field is required.
 *
 * @since 0.2.0
 */
export interface Field<A> {
  readonly check: Check
  readonly fallback?: { readonly value: A } | undefined
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
  (value) =>
    test(value) ? undefined : `expected ${expected}, got ${show(value)}`

const isNumber = (n: unknown): n is number => typeof n === "number"

/** @since 0.2.0 */
export const positive = expecting(
  (n) => isNumber(n) && Number.isFinite(n) && n > 0,
  "a positive finite number"
)
/** A positive number; `Infinity` allowed (an unbounded maximum). @since 0.2.0 */
export const positiveOrInfinity = expecting((n) => isNumber(n) && n > 0, "a positive number")
/** @since 0.2.0 */
export const positiveInt = expecting((n) => Number.isInteger(n) && n > 0, "a positive integer")
/** @since 0.2.0 */
export const nonNegativeInt = expecting((n) => Number.isInteger(n) && n >= 0, "a non-negative integer")
/** A ratio in [0, 1]. @since 0.2.0 */
export const ratio = expecting((n) => isNumber(n) && n >= 0 && n <= 1, "a ratio in [0, 1]")
/** A number in (0, 1]: a smoothing factor, where 1 keeps only the latest sample. @since 0.2.0 */
export const positiveRatio = expecting((n) => isNumber(n) && n > 0 && n <= 1, "a number in (0, 1]")
/** A number strictly between 0 and 1 (a back-off ratio). @since 0.2.0 */
export const openRatio = expecting((n) => isNumber(n) && n > 0 && n < 1, "a number strictly between 0 and 1")
/** A finite number ≥ 0. @since 0.2.0 */
export const nonNegative = expecting(
  (n) => isNumber(n) && Number.isFinite(n) && n >= 0,
  "a non-negative finite number"
)
/** A positive, finite duration in milliseconds. @since 0.2.0 */
export const positiveDuration = expecting(
  (n) => isNumber(n) && Number.isFinite(n) && n > 0,
  "a positive, finite duration (ms)"
)
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
export const optional = <A>(check: Check): Field<A | undefined> => ({ check, fallback: { value: undefined } })

/**
 * A field whose missing value is `value`.
 *
 * @since 0.2.0
 */
export const withDefault = <A>(check: Check, value: A): Field<A> => ({ check, fallback: { value } })

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
 * Validates `input` field by field (fields not in `spec` are left out), fills in the defaults,
 * then, when every field is acceptable, applies `rules` across fields (e.g. `min ≤ max`).
 *
 * @since 0.2.0
 */
export const resolve = <C>(
  spec: Spec<C>,
  input: object,
  rules?: (config: C) => ReadonlyArray<Issue>
): Result<C> => {
  const issues: Array<Issue> = []
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

/**
 * Throws a `RangeError` for the first issue (`path: message`), for a kernel constructor called
 * without a binding's check first; returns otherwise.
 *
 * @since 0.2.0
 */
export const orThrow = (issues: ReadonlyArray<Issue>): void => {
  const first = issues[0]
  if (first !== undefined) throw new RangeError(`${first.path.join(".")}: ${first.message}`)
}

/**
 * Checking a policy's options: each field against its range, as plain values. A rule's
 * `issues` lists every problem, each naming its field (`path`), so a binding can report
 * them in its own typed error; `orThrow` turns them into the `RangeError` a kernel
 * constructor throws when called without that check.
 *
 * The ranges are stated once here, with the wording a user sees ("expected a positive
 * integer, got 1.5"), so every policy says the same thing about the same mistake.
 *
 * @since 0.2.0
 */

/**
 * A problem with an option: the field it names (`path`) and what is wrong. The shape of a
 * Schema filter issue, so a binding can report it as it is.
 *
 * @since 0.2.0
 */
export interface Issue {
  readonly path: Array<string>
  readonly message: string
}

/**
 * A range a numeric option must lie in: `holds` decides, `expected` says it in words.
 *
 * @since 0.2.0
 */
export interface Range {
  readonly holds: (n: number) => boolean
  readonly expected: string
}

/**
 * Makes a range.
 *
 * @since 0.2.0
 */
export const range = (expected: string, holds: (n: number) => boolean): Range => ({ expected, holds })

/**
 * A positive, finite number.
 *
 * @since 0.2.0
 */
export const positive: Range = range("a positive finite number", (n) => Number.isFinite(n) && n > 0)

/**
 * A finite number ≥ 0.
 *
 * @since 0.2.0
 */
export const nonNegative: Range = range("a non-negative finite number", (n) => Number.isFinite(n) && n >= 0)

/**
 * A positive integer.
 *
 * @since 0.2.0
 */
export const positiveInt: Range = range("a positive integer", (n) => Number.isInteger(n) && n > 0)

/**
 * A positive, finite duration in milliseconds.
 *
 * @since 0.2.0
 */
export const positiveDuration: Range = range(
  "a positive, finite duration (ms)",
  (n) => Number.isFinite(n) && n > 0
)

/**
 * A share in (0, 1].
 *
 * @since 0.2.0
 */
export const ratio: Range = range("a ratio in (0, 1]", (n) => Number.isFinite(n) && n > 0 && n <= 1)

/**
 * The issue of one field, or `undefined` when it is absent (a default applies) or in range.
 *
 * @since 0.2.0
 */
export const field = (
  path: string | ReadonlyArray<string>,
  value: number | undefined,
  r: Range
): Issue | undefined =>
  value === undefined || r.holds(value)
    ? undefined
    : { path: typeof path === "string" ? [path] : [...path], message: `expected ${r.expected}, got ${value}` }

/**
 * The issues of several fields, each `[path, value, range]`; absent values are skipped.
 *
 * @since 0.2.0
 */
export const fields = (
  checks: ReadonlyArray<
    readonly [path: string | ReadonlyArray<string>, value: number | undefined, range: Range]
  >
): Array<Issue> => {
  const found: Array<Issue> = []
  for (const [path, value, r] of checks) {
    const issue = field(path, value, r)
    if (issue !== undefined) found.push(issue)
  }
  return found
}

/**
 * Throws a `RangeError` for the first issue (`path: message`); returns otherwise.
 *
 * @since 0.2.0
 */
export const orThrow = (issues: ReadonlyArray<Issue>): void => {
  const first = issues[0]
  if (first !== undefined) throw new RangeError(`${first.path.join(".")}: ${first.message}`)
}

/**
 * The ranges and defaults of Sluice's options. A bad option value (a negative window, `NaN`, a
 * ratio outside `[0, 1]`) must fail at construction with a message that names the field, never
 * misbehave later; the rules live here once, so every binding, on either Effect line, accepts
 * and refuses the same values and says why in the same words.
 *
 * A {@link Rule} judges one value and says what is wrong with a value it refuses. A {@link Field} is one option: its type, its rules in order, and its default when it
 * may be left out. A {@link Spec} is a constructor's options, field by field. Durations are
 * milliseconds here: a binding decodes the durations its users write (`"2 seconds"`, a
 * `Duration`) and judges the milliseconds; {@link durationInput} is the rule for the written
 * form itself.
 *
 * @since 0.2.0
 */

/**
 * A rule on one value: `test` says whether it is valid, `message` what is wrong with a value it
 * refused (or with whatever was given where a number belongs).
 *
 * @since 0.2.0
 */
export interface Rule {
  readonly test: (value: number) => boolean
  readonly message: (actual: unknown) => string
}

/**
 * A rule from its test and message.
 *
 * @since 0.2.0
 */
export const rule = (test: (value: number) => boolean, message: (actual: unknown) => string): Rule => ({
  test,
  message
})

/**
 * An integer greater than zero.
 *
 * @since 0.2.0
 */
export const positiveInt: Rule = rule(
  (n) => Number.isInteger(n) && n > 0,
  (n) => `expected a positive integer, got ${String(n)}`
)

/**
 * An integer greater than or equal to zero.
 *
 * @since 0.2.0
 */
export const nonNegativeInt: Rule = rule(
  (n) => Number.isInteger(n) && n >= 0,
  (n) => `expected a non-negative integer, got ${String(n)}`
)

/**
 * A finite number in `[0, 1]`.
 *
 * @since 0.2.0
 */
export const ratio: Rule = rule(
  (n) => Number.isFinite(n) && n >= 0 && n <= 1,
  (n) => `expected a ratio in [0, 1], got ${String(n)}`
)

/**
 * A finite number greater than zero.
 *
 * @since 0.2.0
 */
export const positiveNumber: Rule = rule(
  (n) => Number.isFinite(n) && n > 0,
  (n) => `expected a positive finite number, got ${String(n)}`
)

/**
 * A finite number greater than or equal to zero.
 *
 * @since 0.2.0
 */
export const nonNegativeNumber: Rule = rule(
  (n) => Number.isFinite(n) && n >= 0,
  (n) => `expected a non-negative finite number, got ${String(n)}`
)

/**
 * A duration (milliseconds) greater than zero and finite.
 *
 * @since 0.2.0
 */
export const positiveDuration: Rule = rule(
  (millis) => Number.isFinite(millis) && millis > 0,
  () => "expected a positive, finite duration"
)

/**
 * A finite duration (milliseconds; a negative one never gets this far, see {@link durationInput}).
 *
 * @since 0.2.0
 */
export const finiteDuration: Rule = rule(
  (millis) => Number.isFinite(millis),
  () => "expected a finite duration"
)

/**
 * The problem with a duration as written, before it is read: `NaN` (and `-Infinity`), and
 * anything negative (a number, a bigint of nanoseconds, a string such as `"-5 seconds"`). Effect
 * reads a negative duration as zero; an option given one is a mistake, not "no wait". `Infinity`
 * is a duration (the finite-duration rule refuses it where it must be finite).
 *
 * @since 0.2.0
 */
export const durationInput = (input: unknown): string | undefined => {
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
 * One option: a `number` or a `duration` (milliseconds), its rules in order, and its value when
 * it is left out (`default`). Without a default the option must be given, unless `optional`.
 *
 * @since 0.2.0
 */
export interface Field {
  readonly type: "number" | "duration"
  readonly rules: ReadonlyArray<Rule>
  readonly default?: number
  readonly optional?: boolean
}

/**
 * A constructor's options, field by field.
 *
 * @since 0.2.0
 */
export type Spec = { readonly [name: string]: Field }

/**
 * The problem with a value under a field's rules: the message of the first rule it fails, or
 * `undefined` when it passes them all.
 *
 * @since 0.2.0
 */
export const check = (field: Field, value: number): string | undefined => {
  const failed = field.rules.find((r) => !r.test(value))
  return failed === undefined ? undefined : failed.message(value)
}

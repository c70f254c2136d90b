import { Options } from "@sluice/core"
import * as Field from "@sluice/kernel/options/Field"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/**
 * @internal Checks options by the kernel's rules (`resolve`); the fields named in `durations`
 * are Effect `DurationInput`s (positive, finite), decoded here. Any issue throws one
 * `InvalidOptions` that names every field at fault.
 */
export const validator = <I, C>(
  module: string,
  resolve: (input: I) => Field.Result<C>,
  durations: ReadonlyArray<string> = []
) => {
  const decode = Schema.decodeUnknownEither(Options.PositiveDuration)
  return (input: I): C => {
    // The kernel checks every other key, and refuses one it does not know.
    let kernelInput = input
    if (durations.some((name) => Object.prototype.hasOwnProperty.call(input, name))) {
      const rest: Record<string, unknown> = { ...(input as Record<string, unknown>) }
      for (const name of durations) delete rest[name]
      kernelInput = rest as I
    }
    const result = resolve(kernelInput)
    const issues = result.ok ? [] : [...result.issues]
    const decoded: Record<string, unknown> = {}
    for (const name of durations) {
      const value = (input as Record<string, unknown>)[name]
      if (value === undefined) continue
      const duration = decode(value)
      if (Either.isRight(duration)) decoded[name] = duration.right
      else
        issues.push({
          path: [name],
          message: ParseResult.ArrayFormatter.formatErrorSync(duration.left)[0]!.message
        })
    }
    if (issues.length > 0) {
      throw new Options.InvalidOptions({ module, message: Field.describe(module, issues) })
    }
    return { ...(result as { readonly value: C }).value, ...decoded }
  }
}

/**
 * @internal Runs a construction step that may throw `InvalidOptions` (a validator, or a user
 * factory such as `() => CongestionWindow.unsafeMake(...)`): that error goes to the failure
 * channel, anything else is a defect.
 */
export const tryConstruct = <A>(f: () => A): Effect.Effect<A, Options.InvalidOptions> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(f())
    } catch (error) {
      return error instanceof Options.InvalidOptions ? Effect.fail(error) : Effect.die(error)
    }
  })

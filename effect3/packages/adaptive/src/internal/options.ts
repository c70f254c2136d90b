import { Options } from "@sluice/core"
import type * as Field from "@sluice/kernel/options/Field"
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
    const result = resolve(input)
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
      const lines = issues.map((issue) => `└─ ["${issue.path.join('"]["')}"]\n   └─ ${issue.message}`)
      throw new Options.InvalidOptions({ module, message: `${module}: invalid options\n${lines.join("\n")}` })
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

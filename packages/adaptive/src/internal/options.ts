import { Options } from "@sluice/core"
import * as Field from "@sluice/kernel/options/Field"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/**
 * @internal Checks options by the kernel's rules (`resolve`); the fields named in `durations`
 * are Effect `Duration.Input`s (positive, finite), decoded here. Any issue throws one
 * `InvalidOptions` that names every field at fault.
 */
export const validator = <I, C>(
  module: string,
  resolve: (input: I) => Field.Result<C>,
  durations: ReadonlyArray<string> = []
) => {
  const decode = Schema.decodeUnknownResult(Options.PositiveDuration)
  return (input: I): C => {
    // The kernel checks every other key, and refuses one it does not know.
    let kernelInput = input
    if (durations.some((name) => Object.hasOwn(input as object, name))) {
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
      if (Result.isSuccess(duration)) decoded[name] = duration.success
      else issues.push({ path: [name], message: duration.failure.message })
    }
    if (issues.length > 0) {
      throw new Options.InvalidOptions({ module, message: Field.describe(module, issues) })
    }
    return { ...(result as { readonly value: C }).value, ...decoded }
  }
}

/**
 * @internal Runs a construction step that may throw `InvalidOptions` (a validator, or a user
 * factory such as `() => CongestionWindow.makeUnsafe(...)`), given the context of the fiber
 * that runs it: that error goes to the failure channel, anything else is a defect.
 */
export const tryConstruct = <A>(
  f: (context: Context.Context<never>) => A
): Effect.Effect<A, Options.InvalidOptions> =>
  Effect.withFiber((fiber) => {
    try {
      return Effect.succeed(f(fiber.context))
    } catch (error) {
      return error instanceof Options.InvalidOptions ? Effect.fail(error) : Effect.die(error)
    }
  })

import { Cause, Effect, Exit } from "effect"
import { expect } from "vitest"

/**
 * The function-valued own properties of a service value (arrow-function properties,
 * object-literal members); class methods on a prototype would lose `this` when detached,
 * so the public ones must not live there (checked by `expectKeys`).
 */
export const functionKeys = (service: object): Array<string> =>
  Object.getOwnPropertyNames(service).filter((key) => {
    const descriptor = Object.getOwnPropertyDescriptor(service, key)!
    return descriptor.get === undefined && typeof descriptor.value === "function"
  })

const failure = (run: () => unknown) =>
  Effect.suspend(() => {
    let result: unknown
    try {
      result = run()
    } catch (error) {
      return Effect.succeed(String(error))
    }
    return Effect.isEffect(result)
      ? Effect.map(Effect.exit(result as Effect.Effect<unknown, unknown>), (exit) =>
          Exit.isFailure(exit) && Cause.hasDies(exit.cause) ? Cause.pretty(exit.cause) : undefined
        )
      : Effect.succeed(undefined)
  })

/**
 * Calls each function property detached from its object (as `Effect.forEach(xs, svc.f)`
 * does) and bound, running an Effect it returns: the detached call must not throw or die
 * where the bound one does not. `expectKeys` lists the public methods that must be there.
 */
export const callAllUnbound = (
  service: object,
  args: Record<string, ReadonlyArray<unknown>>,
  expectKeys: ReadonlyArray<string> = Object.keys(args)
) =>
  Effect.gen(function* () {
    const keys = functionKeys(service)
    expect(keys).toEqual(expect.arrayContaining([...expectKeys]))
    for (const key of keys) {
      const fn = (service as Record<string, (...a: ReadonlyArray<unknown>) => unknown>)[key]!
      const input = args[key] ?? [0]
      const bound = yield* failure(() => fn.apply(service, [...input]))
      if (bound !== undefined) continue
      const unbound = yield* failure(() => fn(...input))
      expect(unbound, key).toBeUndefined()
    }
    return keys
  })

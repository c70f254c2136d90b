/**
 * The strategies the CLI and demo know: the built-ins of `@sluice/simulation`, and a
 * user's own from a module that exports a `Strategy` (default export, a named export,
 * or an array of them).
 */
import { Strategy } from "@sluice/simulation"
import { Effect } from "effect"
import { isAbsolute, resolve } from "node:path"
import { pathToFileURL } from "node:url"

export const strategies: ReadonlyArray<Strategy.Strategy> = Strategy.builtIns

export const strategyNames = (): ReadonlyArray<string> => strategies.map((s) => s.name)

export const findStrategy = (name: string): Strategy.Strategy | undefined =>
  strategies.find((s) => s.name === name)

const isModulePath = (s: string) =>
  /\.(m?[jt]s)$/.test(s) || s.startsWith("./") || s.startsWith("../") || isAbsolute(s)

/** Every strategy a module exports (its default export first). */
export const loadStrategyModule = (path: string): Effect.Effect<ReadonlyArray<Strategy.Strategy>, Error> =>
  Effect.tryPromise({
    try: async () => {
      const mod = (await import(pathToFileURL(resolve(path)).href)) as Record<string, unknown>
      const found: Array<Strategy.Strategy> = []
      const add = (u: unknown) => {
        if (Array.isArray(u)) u.forEach(add)
        else if (Strategy.isStrategy(u) && !found.includes(u)) found.push(u)
      }
      add(mod.default)
      for (const [key, value] of Object.entries(mod)) if (key !== "default") add(value)
      if (found.length === 0)
        throw new Error(`${path} exports no Strategy (an object with name, description, make)`)
      return found
    },
    catch: (error) => (error instanceof Error ? error : new Error(String(error)))
  })

/**
 * A built-in strategy's name, or a module path (`./mine.ts`, optionally `#name` to pick
 * one of several exports).
 */
export const resolveStrategy = (spec: string): Effect.Effect<Strategy.Strategy | undefined, Error> => {
  const [path, name] = spec.split("#") as [string, string | undefined]
  if (!isModulePath(path)) return Effect.succeed(findStrategy(spec))
  return Effect.map(loadStrategyModule(path), (all) =>
    name === undefined ? all[0] : all.find((s) => s.name === name)
  )
}

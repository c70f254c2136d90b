/**
 * What the per-call benchmarks share: command-line flags, logging to stderr, the
 * medians and the timed loops. A measurement is the CPU time this process spent
 * (user + system, all its threads, so garbage collection is included), which other
 * processes on the shared machine cannot inflate; `--wall` uses elapsed time instead.
 */
import { Effect } from "effect"
import { performance } from "node:perf_hooks"

export const args = process.argv.slice(2)
export const jsonOnly = args.includes("--json")
export const quick = args.includes("--quick")
/** `--name N`: a positive number, or `fallback` when the flag is absent. */
export const option = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`)
  if (i < 0) return fallback
  const value = Number(args[i + 1])
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name}: expected a positive number`)
  return value
}
const wall = args.includes("--wall")

/** Progress and diagnostics go to stderr, and not at all with `--json`. */
export const log = (...parts: Array<unknown>) => {
  if (!jsonOnly) console.error(...parts)
}

export const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

export const round = (n: number, digits = 1) => Number(n.toFixed(digits))

const now = (): number => {
  if (wall) return performance.now()
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1000
}

/** Runs `call(i)` `n` times in sequence inside one fiber; returns ns per call. */
export const timeEffect = (call: (i: number) => Effect.Effect<unknown, unknown>, n: number) =>
  Effect.gen(function* () {
    const start = now()
    for (let i = 0; i < n; i++) yield* call(i)
    return ((now() - start) * 1e6) / n
  })

/** The same for a promise-returning call, awaited in a plain async loop. */
export const timePromise = (call: () => Promise<unknown>, n: number) =>
  Effect.promise(async () => {
    const start = now()
    for (let i = 0; i < n; i++) await call()
    return ((now() - start) * 1e6) / n
  })

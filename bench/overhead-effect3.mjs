/**
 * The 3.x line's side of `bench/overhead.ts`: the same contenders, on `effect` 3.22 and the
 * `@sluice/*` bindings of `effect3/`, measured in a process of their own.
 *
 * `bench/overhead.ts` starts it with `effect3/` as the working directory:
 *
 *   node --experimental-import-meta-resolve --import tsx [--conditions=@sluice/source] \
 *     ../bench/overhead-effect3.mjs [--quick] [--async] [--wall]
 *
 * Node resolves a bare specifier from the importing file, not from the working directory, so
 * `effect` and `@sluice/*` are imported through `import.meta.resolve(specifier, effect3/)`
 * (hence the flag, which Node 22 needs for the second argument): they come from `effect3/`'s
 * own npm root. Without the `@sluice/source` condition the bindings are `effect3/`'s build
 * (`cd effect3 && npm run build`), as `npm run bench:overhead` measures the main line's; with
 * it, their TypeScript sources as tsx compiles them, which cost about twice as much per call
 * on both lines (most likely esbuild's `keepNames`, which tsx turns on: a `__name` call for
 * every closure created), so `overhead.ts` passes the condition on only when it runs with it.
 * `cockatiel` resolves from this file, as in `overhead.ts`: the same copy on both lines. Plain
 * JavaScript, so the repository's typecheck (Effect 4) does not read Effect 3 code.
 *
 * Prints the JSON object `overhead.ts` printed on the 3.x line, and nothing else on stdout.
 */
import {
  bulkhead,
  circuitBreaker,
  ConsecutiveBreaker,
  handleAll,
  retry as cockatielRetry,
  wrap
} from "cockatiel"
import { readdirSync, statSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { setImmediate } from "node:timers"
import { fileURLToPath, pathToFileURL } from "node:url"

const effect3 = pathToFileURL(`${process.cwd()}/`).href

/** the newest modification time of the files under `dir` (0 when there are none) */
const newest = (dir) => {
  let time = 0
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile()) time = Math.max(time, statSync(join(entry.parentPath, entry.name)).mtimeMs)
  return time
}

/** A package resolved to its build must have been built since its sources last changed. */
const assertBuilt = (url) => {
  const file = fileURLToPath(url)
  const at = file.lastIndexOf("/dist/")
  if (at < 0) return
  const root = file.slice(0, at)
  if (newest(join(root, "src")) > newest(join(root, "dist")))
    throw new Error(
      `${root}/dist is older than its sources: build the 3.x line (cd effect3 && npm run build)`
    )
}

// Only Sluice's own packages are built here: an npm package's files carry the times npm
// extracted them, so its `src/` can look newer than its `dist/` by a few milliseconds.
const load = (specifier) => {
  const url = import.meta.resolve(specifier, effect3)
  if (specifier.startsWith("@sluice/")) assertBuilt(url)
  return import(url)
}
// what the bindings import themselves
for (const specifier of ["@sluice/kernel", "@sluice/core"])
  assertBuilt(import.meta.resolve(specifier, effect3))
const { Effect, Layer, Schedule } = await load("effect")
const { AdaptiveThrottle, ConcurrencyLimiter, CongestionWindow } = await load("@sluice/adaptive")
const { Retry, RetryBudget } = await load("@sluice/retry")
const { version } = createRequire(effect3)("effect/package.json")
// run from anywhere else, this would measure Effect 4 and call it the 3.x line
if (!version.startsWith("3.")) throw new Error(`expected effect 3.x under ${process.cwd()}, found ${version}`)

const args = process.argv.slice(2)
const quick = args.includes("--quick")
const async = args.includes("--async")
const wall = args.includes("--wall")
const CALLS = quick ? 10_000 : 200_000
const WARM_UP = quick ? 5_000 : 100_000
const REPEATS = quick ? 3 : 5
const KEY = "backend"

// the timing of bench/measure.ts: CPU time of this process (user + system), or `--wall`
const now = () => {
  if (wall) return performance.now()
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1000
}
const timeEffect = (call, n) =>
  Effect.gen(function* () {
    const start = now()
    for (let i = 0; i < n; i++) yield* call(i)
    return ((now() - start) * 1e6) / n
  })
const timePromise = (call, n) =>
  Effect.promise(async () => {
    const start = now()
    for (let i = 0; i < n; i++) await call()
    return ((now() - start) * 1e6) / n
  })
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
const round = (n, digits = 1) => Number(n.toFixed(digits))
const turn = () => new Promise((resolve) => setImmediate(() => resolve(1)))

const SluiceLayers = Layer.mergeAll(
  RetryBudget.layer(),
  AdaptiveThrottle.layer(),
  ConcurrencyLimiter.layer({ algorithm: CongestionWindow.factory() })
)

// The contenders of overhead.ts, as the 3.x line writes them.
const program = Effect.gen(function* () {
  const work = async ? Effect.promise(turn) : Effect.succeed(1)

  const budget = yield* RetryBudget.forKey("bench-client")
  const throttle = yield* AdaptiveThrottle.AdaptiveThrottle
  const limiters = yield* ConcurrencyLimiter.ConcurrencyLimiter
  const retry = Retry.unsafeMake({ maxAttempts: 3, budget })
  const stack = retry.around([throttle.gate(KEY), limiters.gate(KEY)])
  const sluiceCall = () => stack(work)

  const semaphore = yield* Effect.makeSemaphore(100)
  const schedule = Schedule.exponential("10 millis").pipe(
    Schedule.jittered,
    Schedule.intersect(Schedule.recurs(2))
  )
  const naiveCall = () => Effect.retry(semaphore.withPermits(1)(work), schedule)

  const policy = wrap(
    cockatielRetry(handleAll, { maxAttempts: 2 }),
    circuitBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
    bulkhead(100, 100)
  )
  const fn = async ? turn : async () => 1
  const cockatielCall = () => policy.execute(fn)

  const handlers = { onSuccess: Effect.succeed, onFailure: Effect.failCause }
  const floorCall = () =>
    Effect.uninterruptibleMask((restore) => Effect.matchCauseEffect(restore(work), handlers))

  const variants = [
    ["bare", (n) => timeEffect(() => work, n)],
    ["sluice", (n) => timeEffect(sluiceCall, n)],
    ["naiveEffect", (n) => timeEffect(naiveCall, n)],
    ["cockatiel", (n) => timePromise(cockatielCall, n)],
    ["limiterAlone", (n) => timeEffect(() => limiters.withLimiter(work, "alone"), n)],
    ["floor", (n) => timeEffect(floorCall, n)]
  ]
  for (const [, measure] of variants) yield* measure(WARM_UP)
  const samples = {}
  for (let r = 0; r < REPEATS; r++) {
    for (const [name, measure] of variants) (samples[name] ??= []).push(yield* measure(CALLS))
  }

  const limiter = limiters.unsafeGet(KEY)
  const stats = throttle.unsafeStats(KEY)
  if (limiter.inFlight !== 0 || stats.accepts !== stats.requests) {
    return yield* Effect.dieMessage(
      `unexpected state: inFlight=${limiter.inFlight}, ${JSON.stringify(stats)}`
    )
  }

  const bare = median(samples.bare)
  const sluice = median(samples.sluice)
  const naive = median(samples.naiveEffect)
  const cockatiel = median(samples.cockatiel)
  const limiterAlone = median(samples.limiterAlone)
  const floor = median(samples.floor)
  return {
    effect: version,
    bindings: import.meta.resolve("@sluice/core", effect3).includes("/dist/") ? "dist" : "source",
    mode: async ? "async" : "sync",
    bareNsPerCall: round(bare),
    sluiceNsPerCall: round(sluice),
    addedNsPerCall: round(sluice - bare),
    naiveEffectNsPerCall: round(naive),
    cockatielNsPerCall: round(cockatiel),
    limiterAloneNsPerCall: round(limiterAlone),
    floorNsPerCall: round(floor),
    ratioVsCockatiel: round(sluice / cockatiel, 3),
    ratioVsNaiveEffect: round(naive / sluice, 2),
    limiterAloneVsStack: round(limiterAlone / sluice, 3),
    floorVsCockatiel: round(floor / cockatiel, 3)
  }
})

console.log(JSON.stringify(await Effect.runPromise(program.pipe(Effect.provide(SluiceLayers)))))

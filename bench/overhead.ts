/**
 * Per-call overhead benchmark: `npm run bench:overhead -- --json [--quick]`.
 *
 * The cost of protection on the success path, inside one process, in one run:
 * - bare: the protected effect alone (`Effect.succeed(1)`);
 * - sluice: Sluice's full client stack around it — retry policy (3 attempts, with a
 *   `RetryBudget`), `AdaptiveThrottle`, `ConcurrencyLimiter` (congestion window) —
 *   composed as `@sluice/http`'s client composes it, `retry.around([throttle.gate(key),
 *   limiter.gate(key)])` (`--layers` also times the same stack nested from the public
 *   combinators, and each layer alone);
 * - naive Effect: `Effect.retry` with a Schedule around `Semaphore.withPermits`;
 * - cockatiel: `wrap(retry, circuitBreaker, bulkhead)` around an async function
 *   that resolves at once;
 * - floor: the cheapest interruption-safe bracket Effect's public API offers
 *   (`Effect.uninterruptibleMask` + `Effect.matchCauseEffect` around `restore(work)`,
 *   handlers that do nothing). Any policy that must learn every outcome, even of an
 *   interrupted call, pays at least this; `floorVsCockatiel` is the ratio no such
 *   wrapper can go below on this machine.
 *
 * Services are built once by Layers; every Effect variant runs the same loop shape
 * (a `for` loop in one `Effect.gen` program that wraps and runs one call per
 * iteration), so runtime start-up is excluded. Each measurement times `CALLS`
 * sequential calls after a warm-up; the variants are measured round-robin `REPEATS`
 * times and the medians are reported.
 *
 * `--async`: every contender wraps real asynchronous work instead of a value — one
 * turn of the event loop (`setImmediate`), as `Effect.promise` for the Effect variants
 * and an `async () =>` function for cockatiel — so the figures show the overhead next
 * to the cost of the smallest real I/O.
 *
 * The 3.x line: `bench/overhead-effect3.mjs` measures the same contenders on `effect` 3.22 and
 * the bindings of `effect3/`, in a child process started after this one's measurements (its
 * own npm root, so its own `effect`; the bindings built as this process runs its own: `dist/`,
 * which `cd effect3 && npm run build` makes, or their sources under the `@sluice/source`
 * condition, which cost about twice as much on both lines). Its JSON is the `effect3` field, and
 * `lines` sets the two lines' ratios to cockatiel and floors side by side, each against the
 * cockatiel of its own process. The goal (`goal`, sync mode): the client stack on Effect 4
 * costs at most 1.0× cockatiel. `--quick` prints none of these three fields unless `--effect3`
 * is given (the smoke test pins the short mode's fields); `--no-effect3` skips the 3.x line.
 *
 * Prints one JSON object on stdout (with --json, nothing else).
 */
import { AdaptiveThrottle, ConcurrencyLimiter, CongestionWindow } from "@sluice/adaptive"
import { Retry, RetryBudget } from "@sluice/retry"
import {
  bulkhead,
  circuitBreaker,
  ConsecutiveBreaker,
  handleAll,
  retry as cockatielRetry,
  wrap
} from "cockatiel"
import { Effect, Layer, Schedule, Semaphore } from "effect"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { args, log, median, quick, round, timeEffect, timePromise } from "./measure.js"

const CALLS = quick ? 10_000 : 200_000
const WARM_UP = quick ? 5_000 : 100_000
const REPEATS = quick ? 3 : 5
const layers = args.includes("--layers")
const async = args.includes("--async")
const turn = () => new Promise<number>((resolve) => setImmediate(() => resolve(1)))
const KEY = "backend"

const SluiceLayers = Layer.mergeAll(
  RetryBudget.layer(),
  AdaptiveThrottle.layer(),
  ConcurrencyLimiter.layer({ algorithm: CongestionWindow.factory() })
)

const program = Effect.gen(function* () {
  const work: Effect.Effect<number> = async ? Effect.promise(turn) : Effect.succeed(1)

  // Sluice: built once, wrapped per call as the HTTP client does per request.
  const budget = yield* RetryBudget.forKey("bench-client")
  const throttle = yield* AdaptiveThrottle.AdaptiveThrottle
  const limiters = yield* ConcurrencyLimiter.ConcurrencyLimiter
  const retry = Retry.makeUnsafe({ maxAttempts: 3, budget })
  const retrying = retry.apply
  // The stack as @sluice/http's client runs it: the retry policy around the throttle's
  // and the limiter's gates (one synchronous admission step for all three, the full
  // machinery only on failure or when a permit must be waited for).
  const stack = retry.around([throttle.gate(KEY), limiters.gate(KEY)])
  const sluiceCall = () => stack(work)

  // Naive Effect: what a user would write with the built-ins.
  const semaphore = yield* Semaphore.make(100)
  // recurs while both do, after the longer delay (3.x: `Schedule.intersect`)
  const schedule = Schedule.max([
    Schedule.exponential("10 millis").pipe(Schedule.jittered),
    Schedule.recurs(2)
  ])
  const naiveCall = () => Effect.retry(semaphore.withPermits(1)(work), schedule)

  // cockatiel, as its README composes the three policies.
  const policy = wrap(
    cockatielRetry(handleAll, { maxAttempts: 2 }),
    circuitBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
    bulkhead(100, 100)
  )
  const fn = async ? turn : async () => 1
  const cockatielCall = () => policy.execute(fn)

  // The floor: an interruption-safe bracket with no bookkeeping at all.
  const handlers = { onSuccess: Effect.succeed, onFailure: Effect.failCause }
  const floorCall = () =>
    Effect.uninterruptibleMask((restore) => Effect.matchCauseEffect(restore(work), handlers))

  const variants: Array<readonly [string, (n: number) => Effect.Effect<number, unknown>]> = [
    ["bare", (n) => timeEffect(() => work, n)],
    ["sluice", (n) => timeEffect(sluiceCall, n)],
    ["naiveEffect", (n) => timeEffect(naiveCall, n)],
    ["cockatiel", (n) => timePromise(cockatielCall, n)],
    // The limiter alone (congestion window, by key as the client uses it): it must cost
    // no more than the whole fused stack it is part of.
    ["limiterAlone", (n) => timeEffect(() => limiters.withLimiter(work, "alone"), n)],
    ["floor", (n) => timeEffect(floorCall, n)]
  ]
  if (layers) {
    // Each layer of the stack alone, to see which one costs what (stderr only).
    const retryNoBudget = Retry.makeUnsafe({ maxAttempts: 3 }).apply
    const limiter = limiters.getUnsafe("layers")
    variants.push(
      [
        "composed stack",
        (n) => timeEffect(() => retrying(throttle.withThrottle(limiters.withLimiter(work, KEY), KEY)), n)
      ],
      ["retry+budget", (n) => timeEffect(() => retrying(work), n)],
      ["retry (no budget)", (n) => timeEffect(() => retryNoBudget(work), n)],
      ["throttle", (n) => timeEffect(() => throttle.withThrottle(work, "layers"), n)],
      ["limiter by key", (n) => timeEffect(() => limiters.withLimiter(work, "layers"), n)],
      ["limiter handle", (n) => timeEffect(() => limiter.withLimiter(work), n)],
      ["semaphore.withPermits", (n) => timeEffect(() => semaphore.withPermits(1)(work), n)],
      ["Effect.retry(schedule)", (n) => timeEffect(() => Effect.retry(work, schedule), n)]
    )
  }

  for (const [name, measure] of variants) {
    const ns = yield* measure(WARM_UP)
    log(`warm-up ${name}: ${round(ns)} ns/call`)
  }
  const samples: Record<string, Array<number>> = {}
  if (layers) {
    for (const [, measure] of variants.slice(6)) yield* measure(WARM_UP)
  }
  for (let r = 0; r < REPEATS; r++) {
    for (const [name, measure] of variants) {
      const ns = yield* measure(CALLS)
      ;(samples[name] ??= []).push(ns)
      log(`round ${r + 1} ${name}: ${round(ns)} ns/call`)
    }
  }

  for (const [name] of variants) log(`median ${name}: ${round(median(samples[name]!))} ns/call`)

  // The stack must really have been on the success path the whole time.
  const limiter = limiters.getUnsafe(KEY)
  const stats = throttle.statsUnsafe(KEY)
  if (limiter.inFlight !== 0 || stats.accepts !== stats.requests) {
    return yield* Effect.die(
      new Error(`unexpected state: inFlight=${limiter.inFlight}, ${JSON.stringify(stats)}`)
    )
  }

  const bare = median(samples.bare!)
  const sluice = median(samples.sluice!)
  const naive = median(samples.naiveEffect!)
  const cockatiel = median(samples.cockatiel!)
  const limiterAlone = median(samples.limiterAlone!)
  const floor = median(samples.floor!)
  return {
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

// the short mode prints the Effect 4 line's fields alone (the smoke test pins them)
const extended = !quick || args.includes("--effect3")

/** whether this process runs the bindings from their sources (the smoke test) rather than dist/ */
const fromSources = [...process.execArgv, process.env.NODE_OPTIONS ?? ""].some((a) =>
  a.includes("@sluice/source")
)

/** The same contenders on the 3.x line, in a child process rooted in `effect3/` (see the module doc). */
const measureEffect3 = () =>
  new Promise<Effect3Result>((resolve, reject) => {
    log("the 3.x line (effect3/), in a child process ...")
    const cwd = fileURLToPath(new URL("../effect3/", import.meta.url))
    const script = fileURLToPath(new URL("./overhead-effect3.mjs", import.meta.url))
    execFile(
      process.execPath,
      [
        "--experimental-import-meta-resolve",
        "--import",
        "tsx",
        // the same build of the bindings as this process measures: its sources, or dist/
        ...(fromSources ? ["--conditions=@sluice/source"] : []),
        script,
        ...args.filter((a) => a === "--quick" || a === "--async" || a === "--wall")
      ],
      { cwd, timeout: 15 * 60_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        error
          ? reject(new Error(`the 3.x line's measurement failed: ${error.message}\n${stderr}`))
          : resolve(JSON.parse(stdout.trim().split("\n").pop()!) as Effect3Result)
    )
  })

interface Effect3Result {
  readonly effect: string
  readonly sluiceNsPerCall: number
  readonly cockatielNsPerCall: number
  readonly floorNsPerCall: number
  readonly ratioVsCockatiel: number
  readonly floorVsCockatiel: number
}

const result = await Effect.runPromise(program.pipe(Effect.provide(SluiceLayers)))
log(
  `calls per measurement: ${CALLS}, repeats: ${REPEATS}, naive/sluice: ${round(result.naiveEffectNsPerCall / result.sluiceNsPerCall, 2)}x`
)
if (extended) {
  const effect3 = args.includes("--no-effect3") ? undefined : await measureEffect3()
  if (effect3 !== undefined) log(`3.x line: ${JSON.stringify(effect3)}`)
  console.log(
    JSON.stringify({
      ...result,
      ...(effect3 === undefined
        ? {}
        : {
            effect3,
            lines: {
              effect4: {
                ratioVsCockatiel: result.ratioVsCockatiel,
                floorVsCockatiel: result.floorVsCockatiel
              },
              effect3: {
                ratioVsCockatiel: effect3.ratioVsCockatiel,
                floorVsCockatiel: effect3.floorVsCockatiel
              }
            }
          }),
      ...(result.mode === "sync"
        ? {
            goal: {
              ratioVsCockatiel: { value: result.ratioVsCockatiel, max: 1, met: result.ratioVsCockatiel <= 1 }
            }
          }
        : {})
    })
  )
} else console.log(JSON.stringify(result))

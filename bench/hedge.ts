/**
 * Hedging benchmark: `npm run bench:hedge -- --json [--quick]`.
 *
 * Three processes, so that the client under test, the backend and the load of other callers do
 * not share an event loop (on a shared machine they still share its cores):
 * - the backend (`bench/hedge-backend.ts`, forked): a real `effect/http` server on Node whose
 *   backend answers in `MEDIAN_MS` (`--median-ms`, default 500: long enough that the tens of
 *   milliseconds a loaded machine's scheduler adds stay small beside it), except for a 5% tail
 *   that takes 10× as long
 *   (exactly 1 in 20 arrivals, at a random place in each block of 20, hedges included);
 * - the load generator of the overload phase (`bench/overload-generator.ts`, forked: undici,
 *   open loop, every request with a deadline of 4 medians), standing for the other callers;
 * - this process: clients under test, `SluiceHttpClient.makeDefault` over undici, driven open
 *   loop (a request every `1000 / rps` ms, bounded by time and count). Each client is fresh and
 *   first makes `WARM` calls (8 at a time) to the healthy `/tail` route of the same host: they
 *   open its connections and warm its hedging policy (`minSamples`, 20: a cold client does not
 *   hedge), as a client that was running when the backend's trouble began.
 *
 * 1. **Tail**: the backend is unloaded (`--rps`, default 40, for `--seconds`, default 15). A
 *    client without hedging, then one with `hedge: { delay }` where the delay is 1.2× the median
 *    the first client measured (the delay a user reads off a latency dashboard;
 *    `--delay-factor`; `--learned`: the default learned delay, the p95). The backend counts the attempts that reach it: `extraRequestRatio` =
 *    attempts / requests − 1 of the hedging client.
 * 2. **Overload**: `/busy`, the same work behind `Middleware.loadShed` with a fixed concurrency
 *    limit of `UNITS` (`--units`, default 8: 10× is then 110 requests/s, which a shared 2-core
 *    machine can still serve and generate, and a 12 s round sees about 140 answers, where 4
 *    units' 6 s rounds saw 20–60 and the goodput ratio swung by ±10% with no hedge sent) and a short queue, offered 10× its capacity (`UNITS /
 *    mean work`, `--overload`): the generator sends all of it but `--client-rps` (default 20),
 *    which the client under test sends with a `timeout` of 4 medians (the generator's deadline
 *    too) and no limiter of its own (so that its whole share reaches the server). A client
 *    without hedging and a fresh one with it take turns in 4 rounds (ABBA order) (`--overload-seconds`,
 *    default 48, in all for each). `hedgeShare` = hedges
 *    the client sent (`sluice_hedge_sent`) per request it sent; `goodputRatio` = 2xx answers
 *    within the deadline (the generator's and the client's) per second of sending / capacity.
 *
 * Prints one JSON object: `{ p50Ms, p99NoHedgeMs, p99HedgeMs, extraRequestRatio, delayMs,
 * overload: { capacityRps, offeredRps, clientRps, hedgeShare, goodputRatio, goodputRatioNoHedge,
 * … }, goals: { p99Ratio, extraRequests, hedgeShare, goodput, met }, machine }`. Goals: p99 at
 * least 4× lower with hedging, extra requests ≤ 6%, at 10× overload hedges ≤ 1% of requests and
 * goodput no lower than without hedging (within 2%: two runs of the same saturated server differ
 * by about that much; the README reports the raw figures).
 */
import { NodeHttpClient } from "@effect/platform-node"
import { SluiceHttpClient } from "@sluice/http"
import { Duration, Effect, Fiber, Metric } from "effect"
import { fork, type ChildProcess } from "node:child_process"
import { availableParallelism, loadavg } from "node:os"
import { fileURLToPath } from "node:url"
import type { BackendOptions } from "./hedge-backend.js"
import type { PhaseRequest, PhaseResult } from "./overload-generator.js"

const args = process.argv.slice(2)
const flag = (name: string) => args.includes(`--${name}`)
const option = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : fallback
}
const quick = flag("quick")
const MEDIAN_MS = option("median-ms", 500)
const TAIL_BLOCK = 20
const TAIL_FACTOR = 10
const RPS = option("rps", 40)
const SECONDS = option("seconds", quick ? 1.5 : 15)
const UNITS = option("units", 8)
const OVERLOAD = option("overload", 10)
const CLIENT_RPS = option("client-rps", 20)
const OVERLOAD_SECONDS = option("overload-seconds", quick ? 1.5 : 48)
/** Every overload request's deadline: four medians. */
const DEADLINE_MS = 4 * MEDIAN_MS
const DELAY_FACTOR = option("delay-factor", 1.2)
const WARM = 24
const ROUNDS = quick ? 1 : 4
const HARD_LIMIT_MS = option("hard-limit-s", 300) * 1000
const SOCKETS = 64

const meanWorkMs = MEDIAN_MS * (1 - 1 / TAIL_BLOCK + TAIL_FACTOR / TAIL_BLOCK)

const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!
}
const round = (n: number, digits = 1) => Number(n.toFixed(digits))

// ---------------------------------------------------------------------------
// the child processes

/** Forks `path` (under tsx) with `argv`; succeeds with the child and its first message. */
const spawnChild = <M>(path: string, argv: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.callback<readonly [ChildProcess, M], Error>((resume) => {
      // Under tsx the loader flags are in execArgv; otherwise load tsx explicitly.
      const execArgv = process.execArgv.some((a) => a.includes("tsx"))
        ? process.execArgv
        : ["--import", "tsx"]
      const child = fork(path, [...argv], { execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] })
      const timer = setTimeout(() => resume(Effect.fail(new Error(`${path} did not start in 90 s`))), 90_000)
      child.once("message", (message: M) => {
        clearTimeout(timer)
        resume(Effect.succeed([child, message] as const))
      })
      child.once("exit", (code) => {
        clearTimeout(timer)
        resume(Effect.fail(new Error(`${path} exited with ${code}`)))
      })
      return Effect.sync(() => {
        clearTimeout(timer)
        child.kill("SIGKILL")
      })
    }),
    ([child]) =>
      Effect.callback<void>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
        const killer = setTimeout(() => child.kill("SIGKILL"), 2000)
        child.once("exit", () => {
          clearTimeout(killer)
          resume(Effect.void)
        })
        if (child.connected) child.send({ type: "exit" })
        else child.kill("SIGKILL")
      })
  )

let nextId = 0
/** Sends `message` with a fresh id to `child`; succeeds with the answer of `type` carrying that id. */
const ask = <A>(child: ChildProcess, message: object, type: string, timeoutMs: number) =>
  Effect.callback<A, Error>((resume) => {
    const id = nextId++
    const onMessage = (answer: { type: string; id: number }) => {
      if (answer.type !== type || answer.id !== id) return
      cleanup()
      resume(Effect.succeed(answer as A))
    }
    const onExit = (code: number | null) => {
      cleanup()
      resume(Effect.fail(new Error(`a child process exited with ${code}`)))
    }
    const cleanup = () => {
      child.off("message", onMessage)
      child.off("exit", onExit)
    }
    child.on("message", onMessage)
    child.on("exit", onExit)
    child.send({ ...message, id })
    return Effect.sync(cleanup)
  }).pipe(
    Effect.timeoutOrElse({
      duration: Duration.millis(timeoutMs),
      orElse: () => Effect.fail(new Error(`no ${type} answer in ${timeoutMs} ms`))
    })
  )

const backendPath = fileURLToPath(new URL("./hedge-backend.ts", import.meta.url))
const generatorPath = fileURLToPath(new URL("./overload-generator.ts", import.meta.url))

interface Phase {
  readonly requests: number
  readonly ok: number
  readonly latencies: ReadonlyArray<number>
  readonly hedges: number
  /** how long requests were being sent */
  readonly sendMs: number
  /** 2xx answers the generator got within their deadline while this phase ran */
  readonly otherOk: number
  readonly otherSent: number
}

/**
 * A fresh client named `name`: warmed by `WARM` calls to `warmUrl`, then offering `rps` requests
 * per second to `url` for `seconds`, while `alongside` (the generator's load, if any) runs.
 */
const offer = (
  url: string,
  warmUrl: string,
  rps: number,
  name: string,
  options: SluiceHttpClient.DefaultOptions,
  seconds: number,
  alongside?: Effect.Effect<PhaseResult, Error>
) =>
  Effect.scoped(
    Effect.gen(function* () {
      const client = yield* SluiceHttpClient.makeDefault({ ...options, name })
      yield* Effect.forEach(
        Array.from({ length: WARM }),
        () =>
          client.get(warmUrl).pipe(
            Effect.flatMap((r) => r.text),
            Effect.ignore
          ),
        { concurrency: 8 }
      )
      const others = alongside === undefined ? undefined : yield* Effect.forkChild(alongside)
      const latencies: Array<number> = []
      let ok = 0
      const total = Math.round(rps * seconds)
      const interval = 1000 / rps
      const fibers: Array<Fiber.Fiber<unknown, unknown>> = []
      const start = performance.now()
      for (let i = 0; i < total; i++) {
        const due = start + i * interval
        const wait = due - performance.now()
        if (wait > 1) yield* Effect.sleep(Duration.millis(wait))
        const sent = performance.now()
        const call = client.get(url).pipe(
          Effect.flatMap((response) => response.text),
          Effect.tap(() =>
            Effect.sync(() => {
              ok++
              latencies.push(performance.now() - sent)
            })
          ),
          Effect.ignore
        )
        fibers.push(yield* Effect.forkChild(call))
      }
      const sendMs = performance.now() - start
      yield* Fiber.awaitAll(fibers)
      const other = others === undefined ? undefined : yield* Fiber.join(others)
      const hedges = yield* Effect.map(Metric.snapshot, (snapshots) =>
        snapshots
          .filter((s) => s.id === "sluice_hedge_sent" && s.attributes?.["policy"] === name)
          .reduce((sum, s) => sum + Number((s.state as { count: number }).count), 0)
      )
      if (flag("verbose")) {
        const refused = yield* Effect.map(Metric.snapshot, (snapshots) =>
          snapshots
            .filter((s) => s.id === "sluice_hedge_refused" && s.attributes?.["policy"] === name)
            .map((s) => [s.attributes?.["reason"], (s.state as { count: number }).count])
        )
        console.error(
          name,
          JSON.stringify({
            sent: total,
            ok,
            hedges,
            refused,
            p99: percentile(latencies, 0.99),
            other:
              other === undefined
                ? undefined
                : {
                    sent: other.sent,
                    ok: other.ok,
                    rejected: other.rejected,
                    timeouts: other.timeouts,
                    unsent: other.unsent,
                    lag: Math.round(other.maxTickLagMs),
                    cpu: Math.round(other.cpuMs)
                  }
          })
        )
      }
      return {
        requests: total,
        ok,
        latencies,
        hedges,
        sendMs,
        otherOk: other?.ok ?? 0,
        otherSent: other?.sent ?? 0
      } satisfies Phase
    })
  )

const program = Effect.gen(function* () {
  const loadAtStart = loadavg().map((l) => round(l, 2))
  const backendOptions: BackendOptions = {
    medianMs: MEDIAN_MS,
    units: UNITS,
    tailBlock: TAIL_BLOCK,
    tailFactor: TAIL_FACTOR
  }
  const [backend, ready] = yield* spawnChild<{ readonly base: string }>(backendPath, [
    JSON.stringify(backendOptions)
  ])
  const [generator] = yield* spawnChild<unknown>(generatorPath, [])
  const base = ready.base
  const warmUrl = `${base}/tail?warm`
  // A warm-up: JIT.
  yield* offer(warmUrl, warmUrl, RPS, "warm", {}, SECONDS / 2)
  const plain = yield* offer(`${base}/tail?plain`, warmUrl, RPS, "tail-plain", {}, SECONDS)
  const p50Ms = percentile(plain.latencies, 0.5)
  const delayMs = Math.ceil(p50Ms * DELAY_FACTOR)
  const hedge = flag("learned") ? {} : { delay: Duration.millis(delayMs) }
  const hedged = yield* offer(`${base}/tail?hedged`, warmUrl, RPS, "tail-hedged", { hedge }, SECONDS)
  const p99NoHedgeMs = percentile(plain.latencies, 0.99)
  const p99HedgeMs = percentile(hedged.latencies, 0.99)
  const { counts } = yield* ask<{ readonly counts: Record<string, number> }>(
    backend,
    { type: "arrivals" },
    "arrivals",
    10_000
  )
  const extraRequestRatio = (counts["tail?hedged"] ?? 0) / hedged.requests - 1

  const capacityRps = (UNITS * 1000) / meanWorkMs
  const offeredRps = capacityRps * OVERLOAD
  const generatorRps = Math.max(0, offeredRps - CLIENT_RPS)
  const roundMs = (OVERLOAD_SECONDS * 1000) / ROUNDS
  // The other callers' load for one round, sent while the client under test sends its own.
  const others = ask<PhaseResult>(
    generator,
    {
      type: "run",
      url: `${base}/busy?others`,
      rps: generatorRps,
      durationMs: roundMs,
      maxRequests: Math.ceil((generatorRps * roundMs) / 1000),
      criticalShare: 0,
      defaultShare: 1,
      deadlineMs: DEADLINE_MS,
      sockets: SOCKETS
    } satisfies Omit<PhaseRequest, "id">,
    "result",
    roundMs + 30_000
  )
  const overloadOptions = { timeout: Duration.millis(DEADLINE_MS), limiter: false } as const
  // The two clients take turns, ROUNDS times, so that a drift of the machine's load hits both.
  const merge = (a: Phase, b: Phase): Phase => ({
    requests: a.requests + b.requests,
    ok: a.ok + b.ok,
    latencies: [...a.latencies, ...b.latencies],
    hedges: a.hedges + b.hedges,
    sendMs: a.sendMs + b.sendMs,
    otherOk: a.otherOk + b.otherOk,
    otherSent: a.otherSent + b.otherSent
  })
  const empty: Phase = { requests: 0, ok: 0, latencies: [], hedges: 0, sendMs: 0, otherOk: 0, otherSent: 0 }
  let busyPlain = empty
  let busyHedged = empty
  for (let round = 0; round < ROUNDS; round++) {
    const runPlain = Effect.map(
      offer(
        `${base}/busy?plain`,
        warmUrl,
        CLIENT_RPS,
        `busy-plain-${round}`,
        overloadOptions,
        roundMs / 1000,
        others
      ),
      (phase) => {
        busyPlain = merge(busyPlain, phase)
      }
    )
    const runHedged = Effect.map(
      offer(
        `${base}/busy?hedged`,
        warmUrl,
        CLIENT_RPS,
        `busy-hedged-${round}`,
        { ...overloadOptions, hedge },
        roundMs / 1000,
        others
      ),
      (phase) => {
        busyHedged = merge(busyHedged, phase)
      }
    )
    // ABBA: which client goes first alternates, so that a drift within a round favours neither.
    if (round % 2 === 0) yield* Effect.andThen(runPlain, runHedged)
    else yield* Effect.andThen(runHedged, runPlain)
  }
  const goodput = (phase: Phase) => ((phase.ok + phase.otherOk) * 1000) / phase.sendMs / capacityRps
  const goodputRatio = goodput(busyHedged)
  const goodputRatioNoHedge = goodput(busyPlain)
  const hedgeShare = busyHedged.hedges / busyHedged.requests
  const goals = {
    p99Ratio: { min: 4, value: round(p99NoHedgeMs / p99HedgeMs, 2) },
    extraRequests: { max: 0.06, value: round(extraRequestRatio, 4) },
    hedgeShare: { max: 0.01, value: round(hedgeShare, 4) },
    goodput: { minOfNoHedge: 0.98, value: round(goodputRatio / goodputRatioNoHedge, 3) }
  }
  const met =
    goals.p99Ratio.value >= goals.p99Ratio.min &&
    goals.extraRequests.value <= goals.extraRequests.max &&
    goals.hedgeShare.value <= goals.hedgeShare.max &&
    goals.goodput.value >= goals.goodput.minOfNoHedge
  return {
    p50Ms: round(p50Ms),
    p99NoHedgeMs: round(p99NoHedgeMs),
    p99HedgeMs: round(p99HedgeMs),
    extraRequestRatio: round(extraRequestRatio, 4),
    delayMs,
    // What bounds the extra requests: calls of the client without hedging slower than the delay
    // (the 5% tail, and fast ones the machine's scheduling delayed past it).
    overDelayShare: round(plain.latencies.filter((l) => l > delayMs).length / plain.latencies.length, 4),
    requests: hedged.requests,
    overload: {
      capacityRps: round(capacityRps),
      offeredRps: round(offeredRps),
      clientRps: CLIENT_RPS,
      hedgeShare: round(hedgeShare, 4),
      hedges: busyHedged.hedges,
      requests: busyHedged.requests,
      goodputRatio: round(goodputRatio, 3),
      goodputRatioNoHedge: round(goodputRatioNoHedge, 3),
      clientOkShare: {
        hedge: round(busyHedged.ok / busyHedged.requests, 3),
        noHedge: round(busyPlain.ok / busyPlain.requests, 3)
      }
    },
    goals: { ...goals, met },
    machine: { cpus: availableParallelism(), loadAverage: loadavg().map((l) => round(l, 2)), loadAtStart }
  }
}).pipe(Effect.provide(NodeHttpClient.layerUndici))

const watchdog = setTimeout(() => {
  console.error("bench:hedge: hard time limit reached")
  process.exit(3)
}, HARD_LIMIT_MS)
watchdog.unref()

Effect.runPromise(Effect.scoped(program)).then(
  (result) => {
    console.log(flag("json") ? JSON.stringify(result) : JSON.stringify(result, null, 2))
    process.exit(0)
  },
  (error) => {
    console.error("bench:hedge failed:", error)
    process.exit(1)
  }
)

/**
 * Hedging benchmark: `npm run bench:hedge -- --json [--quick]`.
 *
 * A real `effect/http` server on Node (127.0.0.1, port 0) whose backend answers in `MEDIAN_MS`
 * (default 250), except for a 5% tail that takes 10× as long, drawn per request, so a hedge of a
 * slow request is most likely fast. Clients are `SluiceHttpClient.makeDefault` over undici, in
 * this process, driven open loop (a request every `1000 / rps` ms, bounded by time and count).
 *
 * 1. **Tail**: the backend is unloaded (`--rps`, default 40, for `--seconds`). A client without
 *    hedging, then one with `hedge: { delay }` where the delay is 1.2× the median the first
 *    client measured (the delay a user reads off a latency dashboard; `--delay-factor`). The
 *    server counts the attempts that reach it: `extraRequestRatio` = attempts / requests − 1 of
 *    the hedging client.
 * 2. **Overload**: the same backend behind `Middleware.loadShed` with a fixed concurrency limit
 *    of `UNITS` (default 8) and a short queue, offered 10× its capacity (`UNITS / mean work`),
 *    by a client without hedging and a fresh one with it, taking turns in 4 rounds; each request has a 1 s
 *    deadline (`timeout`). `hedgeShare` = hedges the client sent (`sluice_hedge_sent`) per
 *    request; `goodputRatio` = 2xx answers per second / capacity.
 *
 * Prints one JSON object: `{ p50Ms, p99NoHedgeMs, p99HedgeMs, extraRequestRatio, delayMs,
 * overload: { capacityRps, offeredRps, hedgeShare, goodputRatio, goodputRatioNoHedge }, goals:
 * { p99Ratio, extraRequests, hedgeShare, goodput, met }, machine }`. Goals: p99 at least 4×
 * lower with hedging, extra requests ≤ 6%, at 10× overload hedges ≤ 1% of requests and goodput
 * no lower than without hedging (within 2%: two runs of the same saturated server differ by
 * about that much; the README reports the raw figures).
 */
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import { ConcurrencyLimiter, LimitAlgorithm } from "@sluice/adaptive"
import { Middleware, SluiceHttpClient } from "@sluice/http"
import { Context, Duration, Effect, Fiber, Layer, Metric } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"
import { availableParallelism, loadavg } from "node:os"

const args = process.argv.slice(2)
const flag = (name: string) => args.includes(`--${name}`)
const option = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : fallback
}
const quick = flag("quick")
const MEDIAN_MS = option("median-ms", 250)
const TAIL_SHARE = 0.05
const TAIL_FACTOR = 10
const RPS = option("rps", 40)
const SECONDS = option("seconds", quick ? 1.5 : 10)
const UNITS = option("units", 8)
const OVERLOAD = option("overload", 10)
const DELAY_FACTOR = option("delay-factor", 1.2)
const WARM = 8
const ROUNDS = quick ? 1 : 4
const HARD_LIMIT_MS = option("hard-limit-s", 300) * 1000

const workMs = () => (Math.random() < TAIL_SHARE ? MEDIAN_MS * TAIL_FACTOR : MEDIAN_MS)
const meanWorkMs = MEDIAN_MS * (1 - TAIL_SHARE + TAIL_SHARE * TAIL_FACTOR)

const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!
}
const round = (n: number, digits = 1) => Number(n.toFixed(digits))

/** Attempts that reached the server, by route. */
const arrivals = new Map<string, number>()
const arrive = (route: string) => arrivals.set(route, (arrivals.get(route) ?? 0) + 1)

const work = (route: string) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    arrive(`${route}${new URL(request.url, "http://x").search}`)
    return Effect.as(Effect.sleep(Duration.millis(workMs())), HttpServerResponse.text("ok"))
  })

const serve = Effect.gen(function* () {
  const limiter = yield* ConcurrencyLimiter.make({
    key: "bench-hedge-server",
    maxQueue: UNITS,
    maxWait: Duration.millis(MEDIAN_MS * 2),
    algorithm: () => LimitAlgorithm.fixed(UNITS)
  })
  const tail = yield* HttpRouter.toHttpEffect(
    HttpRouter.addAll([HttpRouter.route("GET", "/tail", work("tail"))])
  )
  const busy = yield* HttpRouter.toHttpEffect(
    HttpRouter.addAll([HttpRouter.route("GET", "/busy", work("busy"))])
  )
  const guarded = busy.pipe(Middleware.loadShed({ limiter }))
  const app = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    request.url.startsWith("/busy") ? guarded : tail
  )
  const context = yield* Layer.build(
    HttpServer.serve(app).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
    )
  )
  return HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
})

interface Phase {
  readonly requests: number
  readonly ok: number
  readonly latencies: ReadonlyArray<number>
  readonly hedges: number
  readonly elapsedMs: number
}

/** Offers `rps` requests per second to `url` for `SECONDS` through a fresh client. */
const offer = (
  url: string,
  rps: number,
  name: string,
  options: SluiceHttpClient.DefaultOptions,
  seconds = SECONDS
) =>
  Effect.scoped(
    Effect.gen(function* () {
      const client = yield* SluiceHttpClient.makeDefault({ ...options, name })
      // Open the client's connections before measuring (a fresh pool's first requests pay for them).
      yield* Effect.forEach(
        Array.from({ length: WARM }),
        () =>
          client.get(`${url.split("?")[0]}?warm`).pipe(
            Effect.flatMap((r) => r.text),
            Effect.ignore
          ),
        { concurrency: WARM }
      )
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
      if (flag("verbose")) console.error(name, "sent", total)
      yield* Fiber.awaitAll(fibers)
      if (flag("verbose")) {
        const refused = yield* Effect.map(Metric.snapshot, (snapshots) =>
          snapshots
            .filter((s) => s.id === "sluice_hedge_refused" && s.attributes?.["policy"] === name)
            .map((s) => [s.attributes?.["reason"], (s.state as { count: number }).count])
        )
        console.error(name, "done", ok, JSON.stringify(refused), "p99", percentile(latencies, 0.99))
      }
      const elapsedMs = performance.now() - start
      const hedges = yield* Effect.map(Metric.snapshot, (snapshots) =>
        snapshots
          .filter((s) => s.id === "sluice_hedge_sent" && s.attributes?.["policy"] === name)
          .reduce((sum, s) => sum + Number((s.state as { count: number }).count), 0)
      )
      return { requests: total, ok, latencies, hedges, elapsedMs } satisfies Phase
    })
  )

const program = Effect.gen(function* () {
  const base = yield* serve
  // A warm-up: JIT.
  yield* offer(`${base}/tail?warm`, RPS, "warm", {})
  const plain = yield* offer(`${base}/tail?plain`, RPS, "tail-plain", {})
  const p50Ms = percentile(plain.latencies, 0.5)
  const delayMs = Math.ceil(p50Ms * DELAY_FACTOR)
  const hedged = yield* offer(`${base}/tail?hedged`, RPS, "tail-hedged", {
    hedge: { delay: Duration.millis(delayMs) }
  })
  const p99NoHedgeMs = percentile(plain.latencies, 0.99)
  const p99HedgeMs = percentile(hedged.latencies, 0.99)
  const extraRequestRatio = (arrivals.get("tail?hedged") ?? 0) / hedged.requests - 1

  const capacityRps = (UNITS * 1000) / meanWorkMs
  const offeredRps = capacityRps * OVERLOAD
  const overloadOptions = { timeout: Duration.seconds(1), limiter: false } as const
  // The two clients take turns, ROUNDS times, so that a drift of the machine's load hits both.
  const merge = (a: Phase, b: Phase): Phase => ({
    requests: a.requests + b.requests,
    ok: a.ok + b.ok,
    latencies: [...a.latencies, ...b.latencies],
    hedges: a.hedges + b.hedges,
    elapsedMs: a.elapsedMs + b.elapsedMs
  })
  const empty: Phase = { requests: 0, ok: 0, latencies: [], hedges: 0, elapsedMs: 0 }
  let busyPlain = empty
  let busyHedged = empty
  for (let round = 0; round < ROUNDS; round++) {
    busyPlain = merge(
      busyPlain,
      yield* offer(`${base}/busy?plain`, offeredRps, `busy-plain-${round}`, overloadOptions, SECONDS / ROUNDS)
    )
    busyHedged = merge(
      busyHedged,
      yield* offer(
        `${base}/busy?hedged`,
        offeredRps,
        `busy-hedged-${round}`,
        {
          ...overloadOptions,
          hedge: { delay: Duration.millis(delayMs) }
        },
        SECONDS / ROUNDS
      )
    )
  }
  const goodput = (phase: Phase) => (phase.ok * 1000) / phase.elapsedMs / capacityRps
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
    requests: hedged.requests,
    overload: {
      capacityRps: round(capacityRps),
      offeredRps: round(offeredRps),
      hedgeShare: round(hedgeShare, 4),
      hedges: busyHedged.hedges,
      goodputRatio: round(goodputRatio, 3),
      goodputRatioNoHedge: round(goodputRatioNoHedge, 3)
    },
    goals: { ...goals, met },
    machine: { cpus: availableParallelism(), loadAverage: loadavg().map((l) => round(l, 2)) }
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

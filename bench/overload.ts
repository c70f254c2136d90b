/**
 * Overload benchmark: `npm run bench:overload -- --json [--quick]`.
 *
 * A real `effect/http` server on Node (`@effect/platform-node`, 127.0.0.1, port 0) whose backend has a
 * fixed capacity: `UNITS` concurrent units of `WORK_MS` of work on average (a Semaphore
 * and an `Effect.sleep` of 0.5–1.5 × `WORK_MS`, so the capacity is real and the server's
 * CPU stays free). Three routes share that backend: `/protected` is guarded by Sluice's
 * server middleware (`Middleware.criticality` then `Middleware.loadShed` with a
 * `LoadShedder` and a `ConcurrencyLimiter` whose limit is the delay-based `VegasLimit`
 * algorithm and whose bounded queue serves the most critical waiters first and makes
 * less critical ones give way), `/fleet` is the same and counts arrivals, `/unprotected`
 * goes straight to the backend.
 *
 * A load generator in another process (`bench/overload-generator.ts`, open loop, per
 * request `x-sluice-criticality`, keep-alive undici pool with bounded sockets, 1 s client
 * deadline) offers, in one run:
 * 1. a warm-up, then 0.5× capacity to `/protected` (the unloaded latency);
 * 2. 10× capacity to `/protected`, 20% CRITICAL and 80% SHEDDABLE (CRITICAL alone is 2×
 *    capacity here: at most half of it can succeed);
 * 3. the same 10× to `/unprotected`;
 * 4. the mix where CRITICAL is within capacity — 5% CRITICAL (0.5× capacity), 15% without
 *    a criticality header (the server's default level for them is SHEDDABLE_PLUS), 80%
 *    SHEDDABLE — at 10×, to `/protected` and to `/unprotected`;
 * 5. client fleets in a third process (`bench/overload-fleet.ts`): the same arrivals of
 *    operations at 10× (the mix's shares), made by 4 `SluiceHttpClient`s (`makeDefault`: each
 *    its own retry budget, adaptive throttle, concurrency limiter) and then by 4 naive clients that
 *    retry every failure at once (3 attempts), each operation with a 2 s deadline (sent by the
 *    Sluice clients with `--fleet-deadlines`; the naive ones cannot); the server counts the
 *    attempts that reach it, and its handler runs for callers that had already given up
 *    (`wastedWork`: each attempt names its operation's give-up time in a bench-only header;
 *    the handler compares it with the wall clock when it starts and when it finishes).
 * 6. (`flood`) the closed-loop flood with autocannon against the README's server; then its
 *    refusal cost A/B: `--cost-rounds` (5) rounds of the same flood, `--cost-seconds` (3) each,
 *    against the README's server and each floor (Effect's bare 503, Effect's JSON 503, node's 503)
 *    in turn, the order reversed every other round; the goal reads the median round;
 * 7. (`degraded`) the same flood against the README's server with `Middleware.degrade` added: a
 *    route whose full answer holds one of the units for 200 ms and whose degraded answer (the
 *    first shard) takes 20 ms beside them, at most `--degraded-concurrency` (default 4 × units)
 *    at once; the server tallies what it answered by the caller's level.
 * 8. tenants (`tenantsPhase`): the README's server with `Middleware.quota({ enforce: "overload" })`
 *    (memory store), 9 customers within their plans sending 0.8x capacity in all and a 10th at
 *    8x its plan making up the rest of 3x capacity, one criticality for all; then the same
 *    customers at 0.5x capacity in all.
 *
 * Prints one JSON object:
 * `{capacityRps, offeredRps, goodputRps, goodputRatio, criticalSuccessRatio,
 * sheddableSuccessRatio, p99AdmittedMs, p99UnloadedMs, unprotected: {goodputRps, p99Ms,
 * timeouts}, mix: {shares, offeredRps, goodputRps, goodputRatio, success: {CRITICAL,
 * DEFAULT, SHEDDABLE}, p99AdmittedMs, unprotected: {...}, goals: {goodputRatio,
 * criticalSuccessRatio, p99AdmittedOverUnloaded, met}}, fleet: {clients,
 * offeredOperationsRps, sluice: {operations, ok, attemptsAtServer, attemptsPerOperation,
 * attemptsPerSuccess, goodputRatio, criticalSuccess, failures, wastedWork: {handlerRuns,
 * startedAfterGiveUp, finishedAfterGiveUp, startedAfterGiveUpShare, finishedAfterGiveUpShare}},
 * naive: {...}, goals:
 * {goodputRatio, attemptsPerOperation, criticalSuccess, met}}, flood: {...}, degraded: {seconds,
 * fullMs, degradedMs, concurrency, capacityRps, answersRps, answersPerCapacity, full, degraded,
 * refused, critical: {full, degraded, refused, clientP99Ms}, criticalFullShare, goals:
 * {answersPerCapacity, criticalFullShare, met}}, tenants: {queue, offeredRps, withinPlanSuccess,
 * goodputRatio, overPlan: {sent, ok, denied, refused, servedOverPlan}, idleOverPlanDenied,
 * idleOverPlan: {sent, ok, servedOverPlan}, goals: {withinPlanSuccess, goodputRatio,
 * idleOverPlanDenied, met}}, machine:
 * {cpus, loadAverage}}` — the top-level fields are phases 1–3; goodput counts 2xx
 * responses received within the deadline per second of offered load; p99AdmittedMs is
 * over the 2xx responses of the phase; the unprotected p99Ms is over every request of
 * the phase (a request past the deadline counts as the deadline, so it is a lower
 * bound). The goals, checked on the mix in the same run: goodput ≥ 0.95 of capacity,
 * CRITICAL success ≥ 0.999 (posed when CRITICAL is at most 0.5 of capacity), p99 of
 * admitted requests ≤ 2× the unloaded p99; on `degraded`, answers served (full + degraded) ≥ 3×
 * the full-answer capacity (units × 1000 / 200 per second) and CRITICAL's share of full answers
 * ≥ 0.999 of the CRITICAL requests the server answered.
 *
 * The tenants' goals: within-plan success ≥ 0.99 and goodput ≥ 0.95 of capacity at 3x, and at
 * 0.5x the 10th customer, still above its plan, served in full (no denial).
 *
 * Options: `--quick` (short phases, for the CI smoke test), `--tenants-only` (the tenants
 * phase alone), `--tenants-seconds S` (10), `--tenants-queue N` (units), `--flood-only`, `--units N`, `--work-ms N`,
 * `--critical-share R` (default 0.2), `--mix-critical R` (0.05), `--mix-default R` (0.15),
 * `--overload X` (default 10), `--flood-only` / `--degraded-only` (that phase alone),
 * `--degraded-seconds S` (6), `--degraded-concurrency N`, `--seconds S` (length of each measured phase), `--sockets
 * N` (generator connections, default max(64, 8 × units)), `--fleet-clients N` (4),
 * `--fleet-limiter default|aimd|per-host-fifo` (the Sluice clients' limiter: their default,
 * a congestion window per host and criticality level serving waiters newest first; `AimdLimit`;
 * or one window and throttle per host serving waiters oldest first, as before),
 * `--fleet-deadlines` (the Sluice fleet's operations run under their deadline, so their
 * attempts carry it, `x-sluice-deadline-ms`; off by default, as the fleet goals were set),
 * `--phase fleet` (the warm-up and the client fleets only: prints `{fleet, machine}`).
 * Everything is bounded in time and count; the server and the child processes always
 * shut down, also on error.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { ConcurrencyLimiter, LoadShedder, VegasLimit } from "@sluice/adaptive"
import { Criticality } from "@sluice/core"
import { Middleware, Protocol } from "@sluice/http"
import type { QuotaConfig } from "@sluice/quota"
import { Context, Duration, Effect, Layer, Metric, Random, Semaphore } from "effect"
import type { Scope } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { fork, type ChildProcess } from "node:child_process"
import { createServer } from "node:http"
import { availableParallelism, loadavg } from "node:os"
import { monitorEventLoopDelay, performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import {
  bareEffect503,
  bareNode503,
  effectJson503,
  cannon,
  flood,
  readmeServer,
  TRUST_SECRET,
  type Cannon,
  type Stage
} from "./flood.js"
import { GIVE_UP_HEADER, type FleetRequest, type FleetResult } from "./overload-fleet.js"
import type { PhaseRequest, PhaseResult } from "./overload-generator.js"
import { args, log, median, option, quick, round } from "./measure.js"

const UNITS = option("units", 8)
const WORK_MS = option("work-ms", 320)
const CAPACITY_RPS = (UNITS * 1000) / WORK_MS
const OVERLOAD = option("overload", 10)
const CRITICAL_SHARE = option("critical-share", 0.2)
// The mix where CRITICAL is within capacity: 5% CRITICAL, 15% without a header (the
// server's default level, SHEDDABLE_PLUS here), 80% SHEDDABLE.
const MIX_CRITICAL = option("mix-critical", 0.05)
const MIX_DEFAULT = option("mix-default", 0.15)
const PHASE_MS = option("seconds", quick ? 1.5 : 8) * 1000
const WARM_UP_MS = quick ? 500 : 2000
const DEADLINE_MS = 1000
const SOCKETS = option("sockets", Math.max(64, 8 * UNITS))
const SMOOTHING_MS = option("smoothing-ms", 20)
const MAX_LIMIT = option("max-limit", UNITS)
const HARD_LIMIT_MS = 10 * 60_000
/** the closed-loop flood (autocannon): seconds per run, flood and CRITICAL connections */
const FLOOD_MS = option("flood-seconds", quick ? 2 : 10) * 1000
const FLOOD_CONNECTIONS = option("flood-connections", 64)
const CRITICAL_CONNECTIONS = option("critical-connections", Math.max(1, Math.floor(UNITS / 2)))
/** the refusal cost: rounds of the flood against each server in turn, seconds per server per round */
const COST_ROUNDS = option("cost-rounds", quick ? 1 : 5)
const COST_MS = option("cost-seconds", quick ? 1 : 3) * 1000
const FLEET_CLIENTS = option("fleet-clients", 4)
const FLEET_DEADLINES = args.includes("--fleet-deadlines")
/** `--phase fleet`: only the warm-up and the client fleets */
const PHASE: "all" | "fleet" = (() => {
  const i = args.indexOf("--phase")
  if (i < 0) return "all"
  if (args[i + 1] !== "fleet") throw new Error("--phase: expected fleet")
  return "fleet"
})()
/**
 * the Sluice fleet's limiter: the client's default (per host and level, newest first), `aimd`
 * (AimdLimit), or `per-host-fifo` (one state per host, oldest first: the client before)
 */
const FLEET_LIMITER: FleetRequest["limiter"] = (() => {
  const i = args.indexOf("--fleet-limiter")
  if (i < 0) return "default"
  const value = args[i + 1]
  if (value !== "default" && value !== "aimd" && value !== "per-host-fifo")
    throw new Error("--fleet-limiter: expected default, aimd or per-host-fifo")
  return value
})()

// tsx turns source maps on; then every `error.stack` read (Effect reads one when a span
// ends in failure, e.g. each shed request) parses source maps. Not what a deployed server pays.
process.setSourceMapsEnabled(false)

// ---------------------------------------------------------------------------
// the generator process

interface Generator {
  readonly run: (
    phase: Omit<PhaseRequest, "type" | "id" | "deadlineMs" | "maxRequests" | "sockets">
  ) => Effect.Effect<PhaseResult, Error>
}

const generatorPath = fileURLToPath(new URL("./overload-generator.ts", import.meta.url))
const fleetPath = fileURLToPath(new URL("./overload-fleet.ts", import.meta.url))

const spawnChild = (path: string) =>
  Effect.acquireRelease(
    Effect.callback<ChildProcess, Error>((resume) => {
      // Under tsx the loader flags are in execArgv; otherwise load tsx explicitly.
      const execArgv = process.execArgv.some((a) => a.includes("tsx"))
        ? process.execArgv
        : ["--import", "tsx"]
      const child = fork(path, [], { execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] })
      // Generous: on a machine shared by many processes a child's loader alone can take 30 s.
      const timer = setTimeout(
        () => resume(Effect.fail(new Error(`${path}: the child process did not start in 90 s`))),
        90_000
      )
      child.once("message", () => {
        clearTimeout(timer)
        resume(Effect.succeed(child))
      })
      child.once("exit", (code) => {
        clearTimeout(timer)
        resume(Effect.fail(new Error(`the load generator exited with ${code}`)))
      })
      return Effect.sync(() => {
        clearTimeout(timer)
        child.kill("SIGKILL")
      })
    }),
    (child) =>
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

const makeGenerator = Effect.map(spawnChild(generatorPath), (child): Generator => {
  let nextId = 0
  return {
    run: (phase) =>
      Effect.callback<PhaseResult, Error>((resume) => {
        const id = nextId++
        const onMessage = (message: PhaseResult) => {
          if (message.type !== "result" || message.id !== id) return
          cleanup()
          resume(Effect.succeed(message))
        }
        const onExit = (code: number | null) => {
          cleanup()
          resume(Effect.fail(new Error(`the load generator exited with ${code}`)))
        }
        const cleanup = () => {
          child.off("message", onMessage)
          child.off("exit", onExit)
        }
        child.on("message", onMessage)
        child.on("exit", onExit)
        const request: PhaseRequest = {
          type: "run",
          id,
          deadlineMs: DEADLINE_MS,
          sockets: SOCKETS,
          // bounded in count as well as in time
          maxRequests: Math.ceil((phase.rps * phase.durationMs) / 1000),
          ...phase
        }
        child.send(request)
        return Effect.sync(cleanup)
      }).pipe(
        Effect.timeoutOrElse({
          duration: Duration.millis(phase.durationMs + DEADLINE_MS + 30_000),
          orElse: () => Effect.fail(new Error("the load generator did not answer in time"))
        })
      )
  }
})

const makeFleet = Effect.map(spawnChild(fleetPath), (child) => {
  let nextId = 0
  return {
    run: (request: Omit<FleetRequest, "type" | "id">) =>
      Effect.callback<FleetResult, Error>((resume) => {
        const id = nextId++
        const onMessage = (message: FleetResult) => {
          if (message.type !== "fleet-result" || message.id !== id) return
          cleanup()
          resume(Effect.succeed(message))
        }
        const onExit = (code: number | null) => {
          cleanup()
          resume(Effect.fail(new Error(`the fleet process exited with ${code}`)))
        }
        const cleanup = () => {
          child.off("message", onMessage)
          child.off("exit", onExit)
        }
        child.on("message", onMessage)
        child.on("exit", onExit)
        child.send({ type: "fleet", id, ...request } satisfies FleetRequest)
        return Effect.sync(cleanup)
      }).pipe(
        Effect.timeoutOrElse({
          duration: Duration.millis(request.durationMs + request.deadlineMs + 60_000),
          orElse: () => Effect.fail(new Error("the fleet did not answer in time"))
        })
      )
  }
})

// ---------------------------------------------------------------------------
// the server

const serve = <E>(app: Middleware.HttpApp<E, Scope.Scope>) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      HttpServer.serve(app).pipe(
        Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
      )
    )
    return HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
  })

// ---------------------------------------------------------------------------

const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!
}
const perSecond = (count: number, ms: number) => (count * 1000) / ms

const summary = (name: string, r: PhaseResult) =>
  `${name}: sent ${r.sent} in ${Math.round(r.sendMs)} ms, ok ${r.ok}, rejected ${r.rejected}, timeouts ${r.timeouts}, ` +
  `errors ${r.errors} (unsent ${r.unsent}), CRITICAL ${r.levels.CRITICAL.ok}/${r.levels.CRITICAL.sent}, ` +
  `DEFAULT ${r.levels.DEFAULT.ok}/${r.levels.DEFAULT.sent}, ` +
  `SHEDDABLE ${r.levels.SHEDDABLE.ok}/${r.levels.SHEDDABLE.sent}, p50 ok ${round(percentile(r.okLatencies, 0.5))} ms, ` +
  `p99 ok ${round(percentile(r.okLatencies, 0.99))} ms, generator lag max ${round(r.maxTickLagMs)} ms, CPU ${Math.round(r.cpuMs)} ms, connects ${r.connects}, statuses ${JSON.stringify(r.statuses)}`

/** The server's own state during a phase: event-loop delay and CPU, to tell server saturation from overload. */
const serverProbe = () => {
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  const cpu = process.cpuUsage()
  const start = performance.now()
  return () => {
    delay.disable()
    const used = process.cpuUsage(cpu)
    const elapsed = performance.now() - start
    return `server: event-loop delay p99 ${round(delay.percentile(99) / 1e6)} ms, max ${round(delay.max / 1e6)} ms, CPU ${round((100 * (used.user + used.system)) / 1000 / elapsed)}%`
  }
}

// ---------------------------------------------------------------------------
// the closed-loop flood: autocannon in child processes against the README's server (bench/flood.ts)

const critical = (url: string, durationMs: number) =>
  cannon(
    url,
    CRITICAL_CONNECTIONS,
    { "x-sluice-criticality": "CRITICAL", "x-sluice-trust": TRUST_SECRET },
    durationMs
  )

const floodPhase = (handler: Effect.Effect<HttpServerResponse.HttpServerResponse>) =>
  Effect.gen(function* () {
    const url = yield* readmeServer(handler, UNITS)
    const effectUrl = yield* bareEffect503
    const nodeUrl = yield* bareNode503
    const jsonUrl = yield* effectJson503
    // warm-up (the flood's path too: every server is measured warm), then CRITICAL alone (its
    // unloaded latency), then flood + CRITICAL
    const warm = Math.min(FLOOD_MS, 1000)
    yield* flood(url, FLOOD_CONNECTIONS, warm)
    yield* critical(url, Math.min(FLOOD_MS, 2000))
    const unloaded = yield* critical(url, FLOOD_MS)
    log(`flood: CRITICAL alone: ok ${unloaded.ok}, p50 ${unloaded.p50Ms} ms, p99 ${unloaded.p99Ms} ms`)
    yield* Effect.sleep("500 millis")
    const [[sheddable, headerless], crit] = yield* Effect.all(
      [flood(url, FLOOD_CONNECTIONS, FLOOD_MS), critical(url, FLOOD_MS)],
      {
        concurrency: 2
      }
    )
    const seconds = Math.max(sheddable.seconds, headerless.seconds, crit.seconds)
    log(
      `flood: SHEDDABLE ${JSON.stringify(sheddable)}\n  header-less ${JSON.stringify(headerless)}\n  CRITICAL ${JSON.stringify(crit)}`
    )
    const refusals = (...runs: ReadonlyArray<Cannon>) =>
      runs.reduce((sum, r) => sum + r.non2xx, 0) / Math.max(...runs.map((r) => r.seconds))
    const refusalsPerSec = refusals(sheddable, headerless, crit)
    // The refusal cost, A/B: the same 64-connection flood against the README's server and each
    // floor in turn, for COST_MS each, in rounds whose order is reversed every other round, so
    // that the machine's drift (this is a shared 2-core machine) falls on both sides of each
    // pair. A round's ratio compares two servers measured back to back; the goal reads the
    // median round. The floors are warmed first, as the README's server was.
    const servers = [
      ["sluice", url],
      ["effect", effectUrl],
      ["effectJson", jsonUrl],
      ["node", nodeUrl]
    ] as const
    for (const [, floorUrl] of servers.slice(1))
      yield* Effect.sleep("200 millis").pipe(Effect.andThen(flood(floorUrl, FLOOD_CONNECTIONS, warm)))
    const rounds: Array<Record<(typeof servers)[number][0], number>> = []
    for (let r = 0; r < COST_ROUNDS; r++) {
      const rates = { sluice: 0, effect: 0, effectJson: 0, node: 0 }
      for (const [name, serverUrl] of r % 2 === 0 ? servers : [...servers].reverse()) {
        yield* Effect.sleep("200 millis")
        rates[name] = refusals(...(yield* flood(serverUrl, FLOOD_CONNECTIONS, COST_MS)))
      }
      rounds.push(rates)
    }
    const costRounds = rounds.map((r) => ({
      sluice: Math.round(r.sluice),
      effect: Math.round(r.effect),
      effectJson: Math.round(r.effectJson),
      node: Math.round(r.node),
      costVsEffect: round(r.effect / Math.max(1, r.sluice), 2),
      costVsEffectJson: round(r.effectJson / Math.max(1, r.sluice), 2)
    }))
    const effectRefusalsPerSec = median(rounds.map((r) => r.effect))
    const nodeRefusalsPerSec = median(rounds.map((r) => r.node))
    const effectJsonRefusalsPerSec = median(rounds.map((r) => r.effectJson))
    const goodput = (sheddable.ok + headerless.ok + crit.ok) / seconds
    const goodputRatio = goodput / CAPACITY_RPS
    const criticalTotal = crit.ok + crit.non2xx + crit.errors + crit.timeouts
    const criticalSuccess = criticalTotal === 0 ? 0 : crit.ok / criticalTotal
    const p99Ratio = crit.p99Ms / unloaded.p99Ms
    // a refusal's cost against Effect's own 503: how many more of Effect's refusals the same flood
    // gets, in the median round
    const refusalCostVsEffect = median(costRounds.map((r) => r.costVsEffect))
    const goals = {
      goodputRatio: { value: round(goodputRatio, 3), min: 0.9, met: goodputRatio >= 0.9 },
      criticalSuccess: {
        value: round(criticalSuccess, 4),
        min: 1,
        met: criticalTotal > 0 && criticalSuccess >= 1
      },
      criticalP99OverUnloaded: { value: round(p99Ratio, 2), max: 2, met: p99Ratio <= 2 },
      refusalCostVsEffect: { value: round(refusalCostVsEffect, 2), max: 2, met: refusalCostVsEffect <= 2 }
    }
    return {
      seconds: round(seconds, 1),
      connections: { flood: FLOOD_CONNECTIONS, critical: CRITICAL_CONNECTIONS },
      goodputRps: round(goodput),
      goodputRatio: round(goodputRatio, 3),
      critical: { served: crit.ok, total: criticalTotal, p50Ms: crit.p50Ms, p99Ms: crit.p99Ms },
      unloadedP99Ms: unloaded.p99Ms,
      refusalsPerSec: Math.round(refusalsPerSec),
      costRounds,
      floor: {
        effectRefusalsPerSec: Math.round(effectRefusalsPerSec),
        nodeRefusalsPerSec: Math.round(nodeRefusalsPerSec),
        // Effect's route answering the same JSON 503 as the shed (the body's own cost)
        effectJsonRefusalsPerSec: Math.round(effectJsonRefusalsPerSec)
      },
      refusalCostVsEffect: round(refusalCostVsEffect, 2),
      refusalCostVsEffectJson: round(median(costRounds.map((r) => r.costVsEffectJson)), 2),
      goals: {
        ...goals,
        met:
          goals.goodputRatio.met &&
          goals.criticalSuccess.met &&
          goals.criticalP99OverUnloaded.met &&
          goals.refusalCostVsEffect.met
      }
    }
  })

// ---------------------------------------------------------------------------
// degraded answers: the README's server with `Middleware.degrade` under the same flood

/** A full answer's work and a degraded one's (the first shard, a cached copy). */
const FULL_MS = 200
const DEGRADED_MS = 20
/** degraded answers at once (`Middleware.degrade`'s `concurrency`): a tenth of a full answer's cost each */
const DEGRADED_CONCURRENCY = option("degraded-concurrency", 4 * UNITS)
type Kind = "full" | "degraded" | "refused"
const DEGRADED_PHASE_MS = option("degraded-seconds", quick ? 2 : 6) * 1000

/**
 * The closed-loop flood of the `flood` phase (64 connections, half SHEDDABLE, half without a
 * header; and the trusted CRITICAL connections) against a route whose full answer holds one of
 * `UNITS` backend units for `FULL_MS`, and whose degraded answer takes `DEGRADED_MS` beside the
 * backend. The server counts what it answered, by the caller's level: full, degraded
 * (`x-sluice-degraded`) or refused.
 */
const degradedPhase = Effect.gen(function* () {
  const units = yield* Semaphore.make(UNITS)
  const full = units.withPermits(1)(
    Effect.as(Effect.sleep(Duration.millis(FULL_MS)), HttpServerResponse.text("all shards"))
  )
  const degraded = Effect.as(
    Effect.sleep(Duration.millis(DEGRADED_MS)),
    HttpServerResponse.text("first shard")
  )
  const counts = () => ({
    CRITICAL: { full: 0, degraded: 0, refused: 0 },
    other: { full: 0, degraded: 0, refused: 0 }
  })
  let answered = counts()
  const tally = <E, R>(app: Middleware.HttpApp<E, R>): Middleware.HttpApp<E, R> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      Effect.tap(app, (response) =>
        Effect.sync(() => {
          const level = request.headers["x-sluice-criticality"] === "CRITICAL" ? "CRITICAL" : "other"
          const kind: Kind =
            response.status >= 300 ? "refused" : Protocol.isDegraded(response.headers) ? "degraded" : "full"
          answered[level][kind]++
        })
      )
    )
  const url = yield* readmeServer(full, UNITS, 5, {
    degraded,
    degradedConcurrency: DEGRADED_CONCURRENCY,
    around: tally as Stage
  })
  // warm-up, then the flood with CRITICAL beside it
  yield* critical(url, Math.min(DEGRADED_PHASE_MS, 1000))
  yield* Effect.sleep("300 millis")
  answered = counts()
  const [[sheddable, headerless], crit] = yield* Effect.all(
    [flood(url, FLOOD_CONNECTIONS, DEGRADED_PHASE_MS), critical(url, DEGRADED_PHASE_MS)],
    { concurrency: 2 }
  )
  const seconds = Math.max(sheddable.seconds, headerless.seconds, crit.seconds)
  const counted = answered
  log(
    `degraded: server answered ${JSON.stringify(counted)} in ${seconds} s; CRITICAL client ${JSON.stringify(crit)}`
  )
  const capacityRps = (UNITS * 1000) / FULL_MS
  const all = (kind: Kind) => counted.CRITICAL[kind] + counted.other[kind]
  const answersRps = (all("full") + all("degraded")) / seconds
  const answersPerCapacity = answersRps / capacityRps
  const criticalTotal = counted.CRITICAL.full + counted.CRITICAL.degraded + counted.CRITICAL.refused
  const criticalFullShare = criticalTotal === 0 ? 0 : counted.CRITICAL.full / criticalTotal
  const goals = {
    answersPerCapacity: { value: round(answersPerCapacity, 2), min: 3, met: answersPerCapacity >= 3 },
    criticalFullShare: {
      value: round(criticalFullShare, 4),
      min: 0.999,
      met: criticalTotal > 0 && criticalFullShare >= 0.999
    }
  }
  return {
    seconds: round(seconds, 1),
    fullMs: FULL_MS,
    degradedMs: DEGRADED_MS,
    concurrency: DEGRADED_CONCURRENCY,
    capacityRps,
    answersRps: round(answersRps),
    answersPerCapacity: round(answersPerCapacity, 2),
    full: all("full"),
    degraded: all("degraded"),
    refused: all("refused"),
    critical: { ...counted.CRITICAL, clientP99Ms: crit.p99Ms },
    criticalFullShare: round(criticalFullShare, 4),
    goals: { ...goals, met: goals.answersPerCapacity.met && goals.criticalFullShare.met }
  }
})
/**
 * The `tenants` phase: 10 customers on the README's server with
 * `Middleware.quota({ enforce: "overload" })` (memory store), every request at the same
 * criticality (no header: the server's default, clamped to its ceiling). 9 customers within
 * their plans send 0.8x capacity in all; the 10th, at 8x its plan, makes up the rest of 3x
 * capacity. Then the same customers at 0.5x capacity in all: the server has room, and the
 * 10th customer (still above its plan) must be served without a denial.
 */
const WITHIN_CUSTOMERS = 9
const TENANTS_MS = option("tenants-seconds", quick ? 1.5 : 10) * 1000
/**
 * The bound's queue of the tenants' server: as long as its units (`--tenants-queue N`), as the
 * http README's "Quotas that bite only in overload" configures it, not the default half. The
 * 10th customer keeps every unit busy, so each within-plan request waits for a unit to free,
 * and the within-plan customers' own bursts need the room: with half the units, 4–6 of 400
 * within-plan requests met a full queue (success 0.985–0.99); with as many, none in three
 * 20 s runs. Over-plan work never waits there behind its own level (the kernel's `Limiter`).
 */
const TENANTS_QUEUE = option("tenants-queue", UNITS)
const tenantsPhase = (
  generator: Generator,
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse>,
  settle: Effect.Effect<void>
) =>
  Effect.gen(function* () {
    const withinRps = 0.8 * CAPACITY_RPS
    const overRps = 3 * CAPACITY_RPS - withinRps
    // Plans as gcra rates over 10 s: the within-plan customers may send twice what they do;
    // the 10th customer's plan is an eighth of what it sends at 3x.
    const overPlanPer10s = Math.max(1, Math.round((overRps / 8) * 10))
    const withinPlanPer10s = Math.max(1, Math.ceil((withinRps / WITHIN_CUSTOMERS) * 2 * 10))
    const plans: QuotaConfig.QuotaConfigOptions = {
      default: {
        tiers: [
          {
            name: "spike",
            algorithm: "gcra",
            limit: withinPlanPer10s,
            period: "10 seconds",
            burst: Math.max(5, Math.ceil(withinPlanPer10s / 5))
          }
        ]
      },
      clients: {
        "tenant-over": {
          tiers: [
            {
              name: "spike",
              algorithm: "gcra",
              limit: overPlanPer10s,
              period: "10 seconds",
              burst: Math.max(1, Math.ceil(overPlanPer10s / 10))
            }
          ]
        }
      }
    }
    // Requests the handler served while over their plan (marked by the quota middleware).
    let servedOverPlan = 0
    const counted = Effect.flatMap(Effect.service(Criticality.currentOverQuota), (over) => {
      if (over !== undefined) servedOverPlan++
      return handler
    })
    const url = yield* readmeServer(counted, UNITS, 5, {
      plans,
      enforce: "overload",
      maxQueue: TENANTS_QUEUE
    })
    const customers = [
      ...Array.from({ length: WITHIN_CUSTOMERS }, (_, i) => ({
        key: `tenant-${i}`,
        share: withinRps / (3 * CAPACITY_RPS) / WITHIN_CUSTOMERS
      })),
      { key: "tenant-over", share: overRps / (3 * CAPACITY_RPS) }
    ]
    const run = (factor: number, durationMs: number) =>
      generator.run({
        url,
        rps: CAPACITY_RPS * factor,
        durationMs,
        criticalShare: 0,
        defaultShare: 1,
        customers
      })
    const within = (r: PhaseResult) =>
      customers
        .slice(0, WITHIN_CUSTOMERS)
        .reduce(
          (sum, c) => ({ sent: sum.sent + r.customers[c.key]!.sent, ok: sum.ok + r.customers[c.key]!.ok }),
          {
            sent: 0,
            ok: 0
          }
        )
    yield* run(0.5, quick ? 300 : 1000)
    yield* settle
    // the 10th customer starts the measured phases with its bucket full, as a fresh customer
    servedOverPlan = 0
    const loaded = yield* run(3, TENANTS_MS)
    const loadedOverPlan = servedOverPlan
    log(summary("tenants 3x", loaded), `\n  customers ${JSON.stringify(loaded.customers)}`)
    log(`counters after tenants 3x (cumulative):\n  ${(yield* sluiceCounters).join("\n  ")}`)
    yield* settle
    servedOverPlan = 0
    const idle = yield* run(0.5, TENANTS_MS)
    const idleOverPlan = servedOverPlan
    log(summary("tenants 0.5x", idle), `\n  customers ${JSON.stringify(idle.customers)}`)
    const w = within(loaded)
    const withinPlanSuccess = w.sent === 0 ? 0 : w.ok / w.sent
    const goodputRatio = perSecond(loaded.ok, loaded.sendMs) / CAPACITY_RPS
    const over = loaded.customers["tenant-over"]!
    const idleOver = idle.customers["tenant-over"]!
    const idleOverPlanDenied = idleOver.denied
    const goals = {
      withinPlanSuccess: { value: round(withinPlanSuccess, 4), min: 0.99, met: withinPlanSuccess >= 0.99 },
      goodputRatio: { value: round(goodputRatio, 3), min: 0.95, met: goodputRatio >= 0.95 },
      // the idle run must have put the 10th customer over its plan for the goal to mean anything
      idleOverPlanDenied: {
        value: idleOverPlanDenied,
        max: 0,
        servedOverPlan: idleOverPlan,
        met: idleOverPlanDenied === 0 && idleOver.ok === idleOver.sent && idleOverPlan > 0
      }
    }
    return {
      seconds: TENANTS_MS / 1000,
      queue: TENANTS_QUEUE,
      offeredRps: Math.round(perSecond(loaded.sent, loaded.sendMs)),
      withinPlanSuccess: round(withinPlanSuccess, 4),
      goodputRatio: round(goodputRatio, 3),
      overPlan: {
        sent: over.sent,
        ok: over.ok,
        denied: over.denied,
        refused: over.refused,
        servedOverPlan: loadedOverPlan
      },
      idleOverPlanDenied,
      idleOverPlan: { sent: idleOver.sent, ok: idleOver.ok, servedOverPlan: idleOverPlan },
      goals: {
        ...goals,
        met: goals.withinPlanSuccess.met && goals.goodputRatio.met && goals.idleOverPlanDenied.met
      }
    }
  })

const sluiceCounters = Effect.map(Metric.snapshot, (metrics) =>
  metrics.flatMap((metric) =>
    metric.type === "Counter" && metric.id.startsWith("sluice_") && metric.state.count > 0
      ? [
          `${metric.id}{${Object.entries(metric.attributes ?? {})
            .map(([key, value]) => `${key}=${value}`)
            .join(",")}} ${metric.state.count}`
        ]
      : []
  )
)

const program = Effect.gen(function* () {
  const units = yield* Semaphore.make(UNITS)
  let busy = 0
  // A unit of work takes WORK_MS on average, uniformly between 0.5x and 1.5x: with a
  // fixed duration, units started together would also finish together, and the backend
  // would free its slots in clumps that no real backend has.
  const backend = units.withPermits(1)(
    Effect.flatMap(Random.nextBetween(0.5 * WORK_MS, 1.5 * WORK_MS), (ms) => {
      busy++
      return Effect.sleep(Duration.millis(ms))
    }).pipe(Effect.ensuring(Effect.sync(() => busy--)))
  )
  const handler = Effect.as(backend, HttpServerResponse.text("ok"))
  const drained = Effect.gen(function* () {
    // Let the backend drain between phases (bounded).
    for (let i = 0; i < 100 && busy > 0; i++) yield* Effect.sleep("50 millis")
    yield* Effect.sleep("200 millis")
  })
  if (args.includes("--tenants-only")) {
    const generator = yield* makeGenerator
    const tenants = yield* tenantsPhase(generator, handler, drained)
    log(`tenants: ${JSON.stringify(tenants)}`)
    return {
      capacityRps: CAPACITY_RPS,
      tenants,
      machine: { cpus: availableParallelism(), loadAverage: loadavg().map((l) => round(l, 2)) }
    }
  }
  if (args.includes("--degraded-only")) {
    const degradedOnly = yield* degradedPhase
    log(`degraded: ${JSON.stringify(degradedOnly)}`)
    return {
      degraded: degradedOnly,
      machine: { cpus: availableParallelism(), loadAverage: loadavg().map((l) => round(l, 2)) }
    }
  }
  if (args.includes("--flood-only")) {
    const floodOnly = yield* floodPhase(handler)
    log(`flood: ${JSON.stringify(floodOnly)}`)
    return {
      flood: floodOnly,
      machine: { cpus: availableParallelism(), loadAverage: loadavg().map((l) => round(l, 2)) }
    }
  }
  // Server-side time of each 2xx answer, from the start of the handler chain: tells time
  // spent inside the server from time spent in sockets and the generator.
  let serverLatencies: Array<number> = []
  const timed = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.suspend(() => {
      const start = performance.now()
      return Effect.tap(app, (response) =>
        Effect.sync(() => {
          if (response.status < 300) serverLatencies.push(performance.now() - start)
        })
      )
    })

  // The limiter: a delay-based limit (VegasLimit, default alpha/beta), by default capped at the
  // backend's known concurrency (`--max-limit`: unbounded, it overshoots this FIFO backend
  // to 13–20 and the extra requests queue inside it), and a queue of one backend's worth
  // that serves the most critical waiters first and makes less critical ones give way.
  const limiter = yield* ConcurrencyLimiter.make({
    key: "backend",
    algorithm: VegasLimit.factory({ initial: UNITS, maxLimit: MAX_LIMIT }),
    // Half a backend's worth of waiters: a full queue of them drains in about half a
    // unit of work. A waiter at the head (the most critical first) gets the next permit
    // that frees, almost surely within WORK_MS while the backend is full (each of the
    // UNITS busy units is still busy that long later with probability ≈ 1/8).
    maxQueue: Math.max(1, Math.floor(UNITS / 2)),
    maxWait: Duration.millis(WORK_MS)
  })
  // The shedder counts the work inside it (in flight and queued in the limiter) against
  // the backend's units plus the queue: SHEDDABLE is refused cheaply at 80% of that;
  // CRITICAL (threshold above 100%) is never refused here but left to the limiter, whose
  // queue makes a less critical waiter give way to it.
  const shedder = yield* LoadShedder.make({
    capacity: 2 * UNITS,
    smoothing: Duration.millis(SMOOTHING_MS),
    thresholds: { SHEDDABLE: 0.8, SHEDDABLE_PLUS: 0.9, CRITICAL: 1.1, CRITICAL_PLUS: 1.2 },
    // the limiter above is this composition's bound: the shedder judges against its own capacity
    bound: false
  })
  // A request without a criticality header is SHEDDABLE_PLUS here (the server's choice):
  // the mix's "DEFAULT" share.
  const guard = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    app.pipe(Middleware.loadShed({ limiter, shedder }), Middleware.criticality({ default: "SHEDDABLE_PLUS" }))
  const guarded = guard(handler)

  // Attempts that reach the server from the client fleets (phase 5), and the handler's runs
  // for them: how many started, and how many finished, after their caller had given up
  // (by the wall clock, which the fleet process shares).
  let fleetArrivals = 0
  const wasted = { handlerRuns: 0, startedAfterGiveUp: 0, finishedAfterGiveUp: 0 }
  const watched = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const giveUpAt = Number(request.headers[GIVE_UP_HEADER] ?? Infinity)
    wasted.handlerRuns++
    if (Date.now() > giveUpAt) wasted.startedAfterGiveUp++
    return Effect.ensuring(
      handler,
      Effect.sync(() => {
        if (Date.now() > giveUpAt) wasted.finishedAfterGiveUp++
      })
    )
  })
  const fleetGuarded = guard(watched)
  const counted = Effect.suspend(() => {
    fleetArrivals++
    return fleetGuarded
  })
  const router = yield* HttpRouter.toHttpEffect(
    Layer.mergeAll(
      HttpRouter.add("GET", "/protected", timed(guarded)),
      HttpRouter.add("GET", "/unprotected", timed(handler)),
      HttpRouter.add("GET", "/fleet", counted)
    )
  )
  const base = yield* serve(router)
  log(`server on ${base}; capacity ${UNITS} units × ${WORK_MS} ms = ${CAPACITY_RPS} rps`)

  // Both child processes start before anything is measured (and in parallel).
  const [generator, fleetProcess] = yield* Effect.all([makeGenerator, makeFleet], { concurrency: 2 })
  const phase = (
    path: string,
    factor: number,
    durationMs: number,
    shares: { readonly critical: number; readonly default?: number } = { critical: CRITICAL_SHARE }
  ) =>
    Effect.suspend(() => {
      const probe = serverProbe()
      serverLatencies = []
      return generator
        .run({
          url: base + path,
          rps: CAPACITY_RPS * factor,
          durationMs,
          criticalShare: shares.critical,
          defaultShare: shares.default ?? 0
        })
        .pipe(
          Effect.tap(() =>
            Effect.sync(() =>
              log(
                `${probe()}, 2xx inside the server p50 ${round(percentile(serverLatencies, 0.5))} ms, p99 ${round(percentile(serverLatencies, 0.99))} ms`
              )
            )
          )
        )
    })
  const settle = drained

  const fleetPhase = Effect.gen(function* () {
    // Client fleets instead of the open-loop generator: the same arrivals of operations
    // (the mix's shares, DEFAULT as SHEDDABLE_PLUS), made by Sluice clients or by naive
    // retrying ones; what the server sees per successful operation.
    const fleetRun = (mode: "sluice" | "naive") =>
      Effect.gen(function* () {
        yield* settle
        const before = fleetArrivals
        const wastedBefore = { ...wasted }
        const result = yield* fleetProcess.run({
          url: base + "/fleet",
          mode,
          clients: FLEET_CLIENTS,
          rps: CAPACITY_RPS * OVERLOAD,
          durationMs: PHASE_MS,
          deadlineMs: 2 * DEADLINE_MS,
          maxRetryAfterMs: 200,
          limiter: FLEET_LIMITER,
          criticalShare: MIX_CRITICAL,
          sheddablePlusShare: MIX_DEFAULT,
          deadlines: FLEET_DEADLINES
        })
        // Handlers still running for this fleet finish before they are counted (bounded).
        yield* settle
        const attempts = fleetArrivals - before
        const runs = wasted.handlerRuns - wastedBefore.handlerRuns
        const startedLate = wasted.startedAfterGiveUp - wastedBefore.startedAfterGiveUp
        const finishedLate = wasted.finishedAfterGiveUp - wastedBefore.finishedAfterGiveUp
        const wastedWork = {
          handlerRuns: runs,
          startedAfterGiveUp: startedLate,
          finishedAfterGiveUp: finishedLate,
          startedAfterGiveUpShare: round(startedLate / Math.max(1, runs), 4),
          finishedAfterGiveUpShare: round(finishedLate / Math.max(1, runs), 4)
        }
        log(
          `fleet ${mode}: ${result.operations} operations, ok ${result.ok}, attempts at the server ${attempts}, ` +
            `failures ${JSON.stringify(result.failures)}, by level ${JSON.stringify(result.byLevel)}, CPU ${Math.round(result.cpuMs)} ms, ` +
            `wasted work ${JSON.stringify(wastedWork)}`
        )
        return {
          operations: result.operations,
          ok: result.ok,
          attemptsAtServer: attempts,
          attemptsPerOperation: round(attempts / Math.max(1, result.operations), 3),
          attemptsPerSuccess: result.ok === 0 ? null : round(attempts / result.ok, 3),
          goodputRatio: round(perSecond(result.ok, result.sendMs) / CAPACITY_RPS, 3),
          criticalSuccess: round(
            result.byLevel.CRITICAL.ok / Math.max(1, result.byLevel.CRITICAL.operations),
            4
          ),
          failures: result.failures,
          wastedWork
        }
      })
    const sluiceFleet = yield* fleetRun("sluice")
    const naiveFleet = yield* fleetRun("naive")
    // The Sluice clients never lose to naive ones: at least their goodput and 0.95 of the
    // capacity, at most half an attempt per operation at the server, every CRITICAL served.
    const fleetGoals = {
      goodputRatio: {
        value: sluiceFleet.goodputRatio,
        min: 0.95,
        naive: naiveFleet.goodputRatio,
        met: sluiceFleet.goodputRatio >= 0.95 && sluiceFleet.goodputRatio >= naiveFleet.goodputRatio
      },
      attemptsPerOperation: {
        value: sluiceFleet.attemptsPerOperation,
        max: 0.5,
        met: sluiceFleet.attemptsPerOperation <= 0.5
      },
      criticalSuccess: { value: sluiceFleet.criticalSuccess, min: 1, met: sluiceFleet.criticalSuccess >= 1 }
    }
    const fleet = {
      clients: FLEET_CLIENTS,
      limiter: FLEET_LIMITER,
      offeredOperationsRps: CAPACITY_RPS * OVERLOAD,
      sluice: sluiceFleet,
      naive: naiveFleet,
      goals: {
        ...fleetGoals,
        met:
          fleetGoals.goodputRatio.met && fleetGoals.attemptsPerOperation.met && fleetGoals.criticalSuccess.met
      }
    }
    return fleet
  })

  log(summary("warm-up 0.5x", yield* phase("/protected", 0.5, WARM_UP_MS)))
  yield* settle
  if (PHASE === "fleet") {
    const fleetOnly = yield* fleetPhase
    return {
      fleet: fleetOnly,
      machine: { cpus: availableParallelism(), loadAverage: loadavg().map((l) => round(l, 2)) }
    }
  }
  const unloaded = yield* phase("/protected", 0.5, PHASE_MS)
  log(summary("unloaded 0.5x", unloaded))
  yield* settle
  const loaded = yield* phase("/protected", OVERLOAD, PHASE_MS)
  log(summary(`protected ${OVERLOAD}x`, loaded))
  const counters = (yield* Metric.snapshot).flatMap((metric) =>
    metric.type === "Counter" && metric.id.startsWith("sluice_")
      ? [
          `${metric.id}{${Object.entries(metric.attributes ?? {})
            .map(([key, value]) => `${key}=${value}`)
            .join(",")}} ${metric.state.count}`
        ]
      : []
  )
  log(`counters after the protected phase (cumulative):\n  ${counters.join("\n  ")}`)
  log(`shedder after: utilization ${round(shedder.utilizationUnsafe(), 3)}`)
  log(
    `limiter after: limit ${round(limiter.limit, 2)}, in flight ${limiter.inFlight}, queued ${limiter.queued}`
  )
  yield* settle
  const unprotected = yield* phase("/unprotected", OVERLOAD, PHASE_MS)
  log(summary(`unprotected ${OVERLOAD}x`, unprotected))
  yield* settle

  // The mix where CRITICAL is within capacity, protected and unprotected.
  const shares = { critical: MIX_CRITICAL, default: MIX_DEFAULT }
  const mixed = yield* phase("/protected", OVERLOAD, PHASE_MS, shares)
  log(summary(`mix protected ${OVERLOAD}x`, mixed))
  yield* settle
  const mixedUnprotected = yield* phase("/unprotected", OVERLOAD, PHASE_MS, shares)
  log(summary(`mix unprotected ${OVERLOAD}x`, mixedUnprotected))

  const fleet = yield* fleetPhase
  yield* settle
  const tenants = yield* tenantsPhase(generator, handler, settle)
  log(`tenants: ${JSON.stringify(tenants)}`)
  yield* settle
  const floodResult = yield* floodPhase(handler)
  log(`flood: ${JSON.stringify(floodResult)}`)
  yield* settle
  const degradedResult = yield* degradedPhase
  log(`degraded: ${JSON.stringify(degradedResult)}`)

  const goodput = perSecond(loaded.ok, loaded.sendMs)
  const ratio = (s: { sent: number; ok: number }) => (s.sent === 0 ? 1 : s.ok / s.sent)
  const p99Unloaded = percentile(unloaded.okLatencies, 0.99)
  const mixGoodputRatio = perSecond(mixed.ok, mixed.sendMs) / CAPACITY_RPS
  const criticalLoadRatio = perSecond(mixed.levels.CRITICAL.sent, mixed.sendMs) / CAPACITY_RPS
  const criticalSuccess = ratio(mixed.levels.CRITICAL)
  const p99Ratio = percentile(mixed.okLatencies, 0.99) / p99Unloaded
  const goals = {
    goodputRatio: { value: round(mixGoodputRatio, 3), min: 0.95, met: mixGoodputRatio >= 0.95 },
    criticalSuccessRatio: {
      value: round(criticalSuccess, 4),
      min: 0.999,
      criticalLoadRatio: round(criticalLoadRatio, 3),
      // the goal is posed only where CRITICAL alone is at most half the capacity
      met: criticalLoadRatio > 0.5 || criticalSuccess >= 0.999
    },
    p99AdmittedOverUnloaded: { value: round(p99Ratio, 2), max: 2, met: p99Ratio <= 2 }
  }
  const mix = {
    shares: {
      CRITICAL: MIX_CRITICAL,
      DEFAULT: MIX_DEFAULT,
      SHEDDABLE: round(1 - MIX_CRITICAL - MIX_DEFAULT, 4)
    },
    offeredRps: Math.round(perSecond(mixed.sent, mixed.sendMs)),
    goodputRps: round(perSecond(mixed.ok, mixed.sendMs)),
    goodputRatio: round(mixGoodputRatio, 3),
    success: {
      CRITICAL: round(criticalSuccess, 4),
      DEFAULT: round(ratio(mixed.levels.DEFAULT), 4),
      SHEDDABLE: round(ratio(mixed.levels.SHEDDABLE), 4)
    },
    p99AdmittedMs: round(percentile(mixed.okLatencies, 0.99)),
    unprotected: {
      goodputRps: round(perSecond(mixedUnprotected.ok, mixedUnprotected.sendMs)),
      goodputRatio: round(perSecond(mixedUnprotected.ok, mixedUnprotected.sendMs) / CAPACITY_RPS, 3),
      criticalSuccess: round(ratio(mixedUnprotected.levels.CRITICAL), 4),
      p99Ms: round(percentile(mixedUnprotected.allLatencies, 0.99)),
      timeouts: mixedUnprotected.timeouts
    },
    goals: {
      ...goals,
      met: goals.goodputRatio.met && goals.criticalSuccessRatio.met && goals.p99AdmittedOverUnloaded.met
    }
  }
  return {
    capacityRps: CAPACITY_RPS,
    offeredRps: Math.round(perSecond(loaded.sent, loaded.sendMs)),
    goodputRps: round(goodput),
    goodputRatio: round(goodput / CAPACITY_RPS, 3),
    criticalSuccessRatio: round(ratio(loaded.levels.CRITICAL), 4),
    sheddableSuccessRatio: round(ratio(loaded.levels.SHEDDABLE), 4),
    p99AdmittedMs: round(percentile(loaded.okLatencies, 0.99)),
    p99UnloadedMs: round(p99Unloaded),
    unprotected: {
      goodputRps: round(perSecond(unprotected.ok, unprotected.sendMs)),
      p99Ms: round(percentile(unprotected.allLatencies, 0.99)),
      timeouts: unprotected.timeouts
    },
    mix,
    fleet,
    tenants,
    flood: floodResult,
    degraded: degradedResult,
    machine: { cpus: availableParallelism(), loadAverage: loadavg().map((l) => round(l, 2)) }
  }
})

const watchdog = setTimeout(() => {
  console.error("bench:overload: hard time limit reached")
  process.exit(3)
}, HARD_LIMIT_MS)
watchdog.unref()

Effect.runPromise(Effect.scoped(program)).then(
  (result) => {
    console.log(JSON.stringify(result))
    process.exit(0)
  },
  (error) => {
    console.error("bench:overload failed:", error)
    process.exit(1)
  }
)

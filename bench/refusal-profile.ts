/**
 * What a refusal costs, middleware by middleware: `npm run bench:refusal-profile [-- options]`.
 *
 * The flood of `bench:overload`'s flood phase (64 closed-loop keep-alive connections from
 * autocannon in child processes, half `SHEDDABLE`, half without a header) against, one after
 * the other in this process: Effect's bare 503 route, then the README's middleware
 * (`bench/flood.ts`) added around that route one at a time from the outside in, each in its
 * place (`criticality`, then `mapErrors`, `quota`, `retryGuard` inside it), and last the
 * README's server itself, where `loadShed` in front of the backend (`--units` slots of
 * 160–480 ms) refuses all but about 25 requests/s of the flood: the server `bench:overload`
 * floods. The middleware around the 503 route run the path they run around a refusal of
 * `loadShed` (a 503 response from inside), so each step is what that middleware adds to a
 * refusal, and the last is what `loadShed`'s refusal costs beyond the route's 503.
 *
 * Per server: responses/s, and this process's CPU time per response (`process.cpuUsage`,
 * user + system, over the measured seconds: the whole server, GC and sockets included, the
 * load tool excluded), which depends less than a rate on what else the machine runs. The step
 * from one server to the next is what that middleware adds to a refusal.
 *
 * `--profile DIR` also records a V8 CPU profile (the inspector's, as `node --cpu-prof` does)
 * of each measured flood into DIR, and prints where the self time of the Effect 503 and of
 * the full server went, by part (node's sockets and parser, Effect's runtime, Effect's HTTP
 * server, each Sluice module, GC), in µs per response.
 *
 * Options: `--seconds S` (measured seconds per server, default 6), `--connections N` (64),
 * `--units N` (8), `--profile DIR`, `--json` (one JSON object on stdout).
 */
import { Duration, Effect, Metric, Random, Semaphore } from "effect"
import { HttpServerResponse } from "effect/http"
import { Session } from "node:inspector"
import { mkdirSync, writeFileSync } from "node:fs"
import { availableParallelism, loadavg } from "node:os"
import { join, resolve } from "node:path"
import { performance } from "node:perf_hooks"
import { bareEffect503, flood, readmeServer } from "./flood.js"
import { args, jsonOnly, log, option, round } from "./measure.js"

const SECONDS = option("seconds", 6)
const CONNECTIONS = option("connections", 64)
const UNITS = option("units", 8)
const WORK_MS = 320
const profileIndex = args.indexOf("--profile")
const PROFILE_DIR = profileIndex < 0 ? undefined : resolve(args[profileIndex + 1] ?? "refusal-profiles")

// As bench:overload: no source-map parsing on `error.stack` reads.
process.setSourceMapsEnabled(false)

// ---------------------------------------------------------------------------
// the CPU profile

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
  readonly startTime: number
  readonly endTime: number
}

const session = new Session()
const post = <A>(method: string, params?: object) =>
  Effect.callback<A, Error>((resume) => {
    session.post(method, params ?? {}, (error, result) =>
      resume(error === null ? Effect.succeed(result as A) : Effect.fail(error))
    )
  })

/** Where a function lives: a Sluice module, Effect's HTTP server, Effect's runtime, node's sockets and parser, GC. */
const partOf = (url: string, functionName: string): string => {
  const sluice = /packages\/([a-z0-9-]+)\/(?:src|dist)\/(?:.*\/)?([A-Za-z0-9]+)\.[jt]s$/.exec(url)
  if (sluice !== null) return `sluice ${sluice[1]}/${sluice[2]}`
  if (url.includes("/effect/dist/") && /\/(http|unstable\/http)\//.test(url)) return "effect http server"
  if (url.includes("/effect/dist/")) return "effect runtime (fibers, Context, Cause, …)"
  if (url.includes("platform-node")) return "@effect/platform-node"
  if (url.startsWith("node:")) return "node (http, net, streams)"
  if (functionName === "(garbage collector)") return "GC"
  if (functionName === "(idle)" || functionName === "(program)") return functionName
  if (url === "") return "native (writev, parser, …)"
  return "other"
}

interface ProfileSummary {
  readonly parts: Record<string, number>
  readonly sluiceFunctions: Record<string, number>
}

/** Self time by part and by Sluice function, in µs per response. */
const summarize = (profile: Profile, responses: number): ProfileSummary => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map<number, number>()
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
  }
  const parts: Record<string, number> = {}
  const functions: Record<string, number> = {}
  for (const [id, us] of self) {
    const { url, functionName, lineNumber } = byId.get(id)!.callFrame
    const part = partOf(url, functionName)
    parts[part] = (parts[part] ?? 0) + us
    if (part.startsWith("sluice")) {
      const name = `${part.slice(7)}:${lineNumber + 1} ${functionName || "(anonymous)"}`
      functions[name] = (functions[name] ?? 0) + us
    }
  }
  const perResponse = (table: Record<string, number>, min: number) =>
    Object.fromEntries(
      Object.entries(table)
        .map(([k, us]) => [k, round(us / responses, 2)] as const)
        .filter(([, us]) => us >= min)
        .sort((a, b) => b[1] - a[1])
    )
  return { parts: perResponse(parts, 0.05), sluiceFunctions: perResponse(functions, 0.05) }
}

// ---------------------------------------------------------------------------

interface Measured {
  readonly server: string
  readonly responsesPerSec: number
  readonly refusalsPerSec: number
  readonly okPerSec: number
  readonly cpuUsPerResponse: number
  readonly profile?: ProfileSummary
}

const measure = (server: string, url: string, profile: boolean) =>
  Effect.gen(function* () {
    // warm-up: the JIT, the connections, the shedder's averages
    yield* flood(url, CONNECTIONS, 2000)
    if (profile) {
      yield* post("Profiler.enable")
      yield* post("Profiler.setSamplingInterval", { interval: 200 })
      yield* post("Profiler.start")
    }
    const cpu = process.cpuUsage()
    const start = performance.now()
    const [a, b] = yield* flood(url, CONNECTIONS, SECONDS * 1000)
    const used = process.cpuUsage(cpu)
    const elapsedSec = (performance.now() - start) / 1000
    const seconds = Math.max(a.seconds, b.seconds)
    const refusals = a.non2xx + b.non2xx
    const ok = a.ok + b.ok
    const responses = refusals + ok
    let summary: ProfileSummary | undefined
    if (profile) {
      const { profile: recorded } = yield* post<{ profile: Profile }>("Profiler.stop")
      yield* post("Profiler.disable")
      mkdirSync(PROFILE_DIR!, { recursive: true })
      const file = join(PROFILE_DIR!, `${server.replace(/[^a-z0-9+]+/gi, "-")}.cpuprofile`)
      writeFileSync(file, JSON.stringify(recorded))
      summary = summarize(recorded, responses)
      log(`  profile: ${file}`)
    }
    const result: Measured = {
      server,
      responsesPerSec: Math.round(responses / seconds),
      refusalsPerSec: Math.round(refusals / seconds),
      okPerSec: round(ok / seconds),
      // over the whole measured span (autocannon's start and end included)
      cpuUsPerResponse: round((used.user + used.system) / responses, 2),
      ...(summary === undefined ? {} : { profile: summary })
    }
    log(`${server}: ${JSON.stringify({ ...result, profile: undefined })} (${round(elapsedSec)} s)`)
    return result
  })

const program = Effect.gen(function* () {
  const units = yield* Semaphore.make(UNITS)
  const backend = units.withPermits(1)(
    Effect.flatMap(Random.nextBetween(0.5 * WORK_MS, 1.5 * WORK_MS), (ms) =>
      Effect.sleep(Duration.millis(ms))
    )
  )
  const handler = Effect.as(backend, HttpServerResponse.text("ok"))
  const profile = PROFILE_DIR !== undefined
  session.connect()
  const loadBefore = loadavg()
  const results: Array<Measured> = []
  results.push(yield* measure("effect 503", yield* bareEffect503, profile))
  const refused = HttpServerResponse.empty({ status: 503 })
  const names = ["criticality", "+ mapErrors", "+ quota", "+ retryGuard"]
  for (let outer = 1; outer <= 4; outer++)
    results.push(
      yield* measure(`503 route ${names[outer - 1]!}`, yield* readmeServer(refused, UNITS, outer), false)
    )
  results.push(
    yield* measure(
      "+ loadShed for the route (the README's server)",
      yield* readmeServer(handler, UNITS),
      profile
    )
  )
  // who refused the flood: the counters by reason and level (cumulative, warm-ups included)
  const counters = (yield* Metric.snapshot).flatMap((metric) =>
    metric.type === "Counter" && metric.id.startsWith("sluice_") && metric.state.count > 0
      ? [
          `${metric.id}{${Object.entries(metric.attributes ?? {})
            .map(([key, value]) => `${key}=${value}`)
            .join(",")}} ${metric.state.count}`
        ]
      : []
  )
  log(`counters:\n  ${counters.join("\n  ")}`)
  const effect = results[0]!
  const full = results[results.length - 1]!
  const steps = results.slice(1).map((r, i) => ({
    server: r.server,
    cpuUsPerResponse: r.cpuUsPerResponse,
    addedUs: round(r.cpuUsPerResponse - results[i]!.cpuUsPerResponse, 2)
  }))
  return {
    seconds: SECONDS,
    connections: CONNECTIONS,
    results,
    steps,
    counters,
    costVsEffect: {
      cpu: round(full.cpuUsPerResponse / effect.cpuUsPerResponse, 2),
      rate: round(effect.responsesPerSec / Math.max(1, full.responsesPerSec), 2)
    },
    machine: {
      cpus: availableParallelism(),
      loadAverage: { before: loadBefore.map((l) => round(l, 2)), after: loadavg().map((l) => round(l, 2)) }
    }
  }
})

Effect.runPromise(
  Effect.scoped(program).pipe(
    Effect.timeoutOrElse({ duration: "10 minutes", orElse: () => Effect.die("timeout") })
  )
).then(
  (result) => {
    if (jsonOnly) console.log(JSON.stringify(result))
    else console.log(JSON.stringify(result, null, 2))
    process.exit(0)
  },
  (error) => {
    console.error(error)
    process.exit(1)
  }
)

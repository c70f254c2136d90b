/**
 * What the README's middleware cost a refusal without the sockets: `npm run bench:refusal-inprocess [-- options]`.
 *
 * The middleware of the server `bench:overload` floods (`bench/flood.ts`), added one at a time
 * from the outside in around Effect's bare 503 route (`criticality`, `+ mapErrors`, `+ quota`,
 * `+ retryGuard`), then the whole stack around a handler that never ends (`+ loadShed`), whose
 * shedder (`capacity: 8`, its bound's queue of 4) is first filled by 12 trusted `CRITICAL`
 * requests: every request measured after that is refused, as under the flood. Each request runs
 * as Effect's Node server runs one (`Effect.runForkWith` in a context holding the request), half
 * `SHEDDABLE`, half without a header; every refusal here completes synchronously.
 *
 * `bench:refusal-profile` measures the same steps over real sockets, where node's writes are most
 * of a response's cost and the figures move with the machine; this one isolates what Sluice's
 * code and Effect's runtime add to a refusal. Prints the process CPU time per request (ns) of each
 * step: the minimum and the median over the rounds, the rounds alternating between the steps.
 *
 * Options: `--n N` (requests per step and round, default 100,000), `--rounds N` (9), `--json`.
 */
import { LoadShedder } from "@sluice/adaptive"
import { Trust } from "@sluice/http"
import { RetryHistogram } from "@sluice/retry"
import { Context, Effect, Layer, Metric, Redacted, Scope } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { readmeQuota, readmeStages, TRUST_SECRET, type Stage } from "./flood.js"
import { jsonOnly, log, median, option } from "./measure.js"

const N = option("n", 100_000)
const ROUNDS = option("rounds", 9)

// As bench:overload: no source-map parsing on `error.stack` reads.
process.setSourceMapsEnabled(false)

// Every service a step needs is in the request's context (`contextOf`), so a step runs as it is.
type App = Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>

const setUp = Effect.gen(function* () {
  const trust = yield* Trust.sharedSecret({ secret: Redacted.make(TRUST_SECRET) })
  const stages = readmeStages(trust)
  const built = yield* Layer.build(
    Layer.mergeAll(
      // a wait longer than the run: the 4 queued holders stay queued
      LoadShedder.layer({ capacity: 8, bound: { maxQueue: 4, maxWait: "1 hour" } }),
      RetryHistogram.layer(),
      readmeQuota()
    )
  )
  const contextOf = (headers: Record<string, string>) =>
    Context.add(
      built as Context.Context<never>,
      HttpServerRequest.HttpServerRequest,
      HttpServerRequest.fromWeb(new Request("http://127.0.0.1/", { headers }))
    )
  // `outer` of the five middleware, in their places, around `app`
  const around = (outer: number, app: App): App =>
    stages.slice(stages.length - outer).reduce<App>((inner, [, stage]) => (stage as Stage)(inner) as App, app)
  const bare: App = Effect.succeed(HttpServerResponse.empty({ status: 503 }))
  const full = around(5, Effect.never)
  const holder = contextOf({ "x-sluice-criticality": "CRITICAL", "x-sluice-trust": TRUST_SECRET })
  for (let i = 0; i < 12; i++) Effect.runForkWith(holder)(full)
  return {
    steps: [
      ["effect 503", bare],
      ["criticality", around(1, bare)],
      ["+ mapErrors", around(2, bare)],
      ["+ quota", around(3, bare)],
      ["+ retryGuard", around(4, bare)],
      ["+ loadShed (the README's server)", full]
    ] as ReadonlyArray<readonly [string, App]>,
    requests: [contextOf({ "x-sluice-criticality": "SHEDDABLE" }), contextOf({})]
  }
})

/** ns of process CPU per request: `N` requests, each on a fiber of its own. */
const measure = (app: App, requests: ReadonlyArray<Context.Context<never>>): number => {
  const cpu = process.cpuUsage()
  for (let i = 0; i < N; i++) {
    const fiber = Effect.runForkWith(requests[i & 1]!)(app)
    if (fiber.pollUnsafe() === undefined) throw new Error("a refusal did not complete synchronously")
  }
  const used = process.cpuUsage(cpu)
  return ((used.user + used.system) * 1000) / N
}

// The layers stay open for the run (a scope closed when the process exits).
const scope = Effect.runSync(Scope.make())
const { steps, requests } = await Effect.runPromise(Scope.provide(setUp, scope))
const samples = steps.map(() => [] as Array<number>)
for (let round = 0; round < ROUNDS; round++) {
  steps.forEach(([, app], i) => samples[i]!.push(measure(app, requests)))
  // between rounds, a turn of the event loop (timers, GC)
  await new Promise((resolve) => setTimeout(resolve, 10))
}
const results = steps.map(([step], i) => ({
  step,
  minNs: Math.round(Math.min(...samples[i]!)),
  medianNs: Math.round(median(samples[i]!))
}))
for (const r of results) log(`${r.step}: ${r.minNs} ns (median ${r.medianNs})`)
// who refused: the counters by reason and level
const counters = Effect.runSync(Metric.snapshot).flatMap((metric) =>
  metric.type === "Counter" && metric.id.startsWith("sluice_") && metric.state.count > 0
    ? [`${metric.id}${JSON.stringify(metric.attributes ?? {})} ${metric.state.count}`]
    : []
)
log(counters.join("\n"))
const output = { n: N, rounds: ROUNDS, results, counters }
console.log(jsonOnly ? JSON.stringify(output) : JSON.stringify(output, null, 2))
process.exit(0)

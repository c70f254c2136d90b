/**
 * Sluice's metrics and traces through Effect's own exporters:
 * `npm run example:metrics [-- --requests 400 --concurrency 32 --json]`.
 *
 * One process, two sides, on a loopback port:
 *
 * - the **server**, an `effect/http` app on `@effect/platform-node`: `GET /api/work` behind
 *   Sluice's middleware (`criticality` → `mapErrors` → `loadShed` → `quota` → handler, a
 *   `LoadShedder` with a small capacity and a `Quota` on the memory store, keyed by
 *   `x-api-key`), and `GET /metrics`, Effect's `PrometheusMetrics.layerHttp()`: the
 *   Prometheus text of every metric in the registry, Sluice's `sluice_*` series
 *   included. `/metrics` is not behind the middleware, so a scrape is never shed.
 * - the **client**, a `SluiceHttpClient` (retry budget, adaptive throttle, concurrency
 *   limiter: `makeDefault`) that puts the server under load: concurrent callers, half
 *   `CRITICAL` and half `SHEDDABLE`, one API key on a tight plan. Some calls are shed
 *   (`503`) and retried, some denied by the quota (`429`), some refused by the client's
 *   own throttle or retry budget.
 *
 * At the end it scrapes `/metrics` over HTTP and prints the `sluice_*` series: the limit of
 * the client's limiter (`sluice_concurrency_limiter_limit{key}`), its throttle's rejection
 * probability (`sluice_adaptive_throttle_probability{key}`), the retry budget
 * (`sluice_retry_budget_withdrawals` / `_denials{policy}`), quota decisions
 * by source (`sluice_quota_allowed_total{source}`, `sluice_quota_denied_total{tier,source}`:
 * `source` is `store`, or the failure mode that decided: `fallback`, `fail-open`,
 * `fail-closed`, each also counted in `sluice_quota_fallback_total`, `_fail_open_total`,
 * `_fail_closed_total`), and
 * sheds by criticality (`sluice_load_shedder_shed{shedder,criticality}`,
 * `sluice_http_server_rejected{reason,criticality}`).
 *
 * **OTLP** is opt-in: with `OTEL_EXPORTER_OTLP_ENDPOINT` set (e.g. `http://localhost:4318`),
 * `Otlp.layerJson` sends the same metrics and the traces to that collector (JSON over HTTP).
 * Each call runs in a span of its own (`example.call`), and the server continues its trace
 * (`traceparent`), so a refused, retried or shed call is visible in its trace: a shed
 * request's server span carries `sluice.refused` (`shed`) and `sluice.criticality` (a shed
 * opens no span of its own: under a flood it would cost more than the refusal),
 * `sluice.http.quota_denied` (`client`, `tier`),
 * `sluice.retry.attempt` (`sluice.retry.attempt`, `sluice.retry.delay_ms`) and
 * `sluice.retry.give_up` (`sluice.retry.reason`, e.g. `budget`) on the client, and
 * `sluice.adaptive_throttle.throttled` (`key`, `probability`) for a call the throttle refused.
 * Without the variable nothing is sent and no collector is needed.
 */
import { createServer } from "node:http"
import { pathToFileURL } from "node:url"
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import { LoadShedder } from "@sluice/adaptive"
import { Criticality } from "@sluice/core"
import { Middleware, Protocol, SluiceHttpClient } from "@sluice/http"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { Context, Effect, Exit, Layer, Schedule, type Scope } from "effect"
import { HttpClient, HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { Otlp, OtlpExporter, PrometheusMetrics } from "effect/observability"

export interface ServerOptions {
  /** The shedder's capacity, in concurrent requests (default 2). */
  readonly capacity?: number
  /** How long the handler works on one request, ms (default 20). */
  readonly workMillis?: number
}

export interface Server {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  readonly shedder: LoadShedder.Service
}

/** The tight plan of the `noisy` API key; everyone else has room to spare. */
export const noisyPlan: QuotaConfig.PlanInput = {
  tiers: [{ name: "spike", algorithm: "gcra", limit: 1, period: "1 second", burst: 5 }]
}
const defaultPlan: QuotaConfig.PlanInput = {
  tiers: [{ name: "spike", algorithm: "gcra", limit: 10_000, period: "1 second", burst: 10_000 }]
}

/** The server's quota: the memory store, the `noisy` key on its tight plan. */
const QuotaLive = Quota.layer().pipe(
  Layer.provide(QuotaStore.layerMemory()),
  Layer.provide(QuotaConfig.layer({ default: defaultPlan, clients: { noisy: noisyPlan } }))
)

/** Starts the server on a loopback port the OS picks; it stops when the scope closes. */
export const makeServer = (options: ServerOptions = {}): Effect.Effect<Server, never, Scope.Scope> =>
  Effect.gen(function* () {
    const shedder = yield* LoadShedder.make({
      name: "example",
      capacity: options.capacity ?? 2,
      smoothing: "50 millis",
      retryAfter: "1 second"
    }).pipe(Effect.orDie)
    const quota = yield* Layer.build(QuotaLive).pipe(Effect.orDie)
    const work = Effect.sleep(options.workMillis ?? 20).pipe(Effect.as(HttpServerResponse.text("done")))
    const guarded = work.pipe(
      Middleware.quota({ client: (request) => Protocol.headerValue(request.headers["x-api-key"]) }),
      Middleware.loadShed({ shedder }),
      Middleware.mapErrors,
      Middleware.criticality(),
      Effect.provideService(Quota.Quota, Context.get(quota, Quota.Quota))
    )
    const app = yield* HttpRouter.toHttpEffect(
      Layer.mergeAll(HttpRouter.add("GET", "/api/work", guarded), PrometheusMetrics.layerHttp())
    )
    const server = yield* Layer.build(
      HttpServer.serve(app).pipe(
        Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
      )
    ).pipe(Effect.orDie)
    return { url: HttpServer.formatAddress(Context.get(server, HttpServer.HttpServer).address), shedder }
  })

export interface LoadOptions {
  /** Calls in all (default 400). */
  readonly requests?: number
  /** Callers at once (default 32). */
  readonly concurrency?: number
}

/** What the client's calls came to: `200`, `429`, or the Sluice error (`DontRetry(budget)`, `Throttled`, ...). */
export type Outcomes = Record<string, number>

/** The client that calls the server: private retry budget, throttle and limiter. */
export const makeClient = SluiceHttpClient.makeDefault({
  name: "metrics-example",
  maxAttempts: 3,
  // a shed's `Retry-After: 1` waits at most this long; a quota's 429 asks for longer and is not retried
  maxRetryAfter: "20 millis",
  schedule: Schedule.exponential("5 millis").pipe(Schedule.jittered),
  // a small budget: under this load the client soon runs out of retries
  budget: { ratio: 0.02, minRetriesPerSecond: 0 }
})

/**
 * Puts the server under load through `client`: call `i` is `SHEDDABLE` when `i` is odd,
 * `CRITICAL` otherwise, and every fourth one comes from the `noisy` API key.
 */
export const runLoad = (
  client: SluiceHttpClient.Client,
  url: string,
  options: LoadOptions = {}
): Effect.Effect<Outcomes> =>
  Effect.gen(function* () {
    const outcomes: Outcomes = {}
    const count = (outcome: string) => {
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
    }
    const call = (i: number) => {
      const apiKey = i % 4 === 0 ? "noisy" : `caller-${i % 7}`
      const level = i % 2 === 1 ? "SHEDDABLE" : "CRITICAL"
      return client.get(`${url}/api/work`, { headers: { "x-api-key": apiKey } }).pipe(
        Effect.flatMap((response) => Effect.as(Effect.ignore(response.text), response.status)),
        Criticality.withCriticality(level),
        // one trace per call: its tries, retries, give-up and the server's spans (traceparent)
        Effect.withSpan("example.call", { attributes: { "api.key": apiKey, criticality: level } }),
        Effect.exit,
        Effect.map((exit) => {
          if (Exit.isSuccess(exit)) return count(String(exit.value))
          const error = Exit.findErrorOption(exit)
          if (error._tag === "None") return count("defect")
          const e = error.value
          count(e._tag === "DontRetry" ? `DontRetry(${e.reason})` : e._tag)
        })
      )
    }
    yield* Effect.forEach(
      Array.from({ length: options.requests ?? 400 }, (_, i) => i),
      call,
      {
        concurrency: options.concurrency ?? 32,
        discard: true
      }
    )
    return outcomes
  })

/** `GET /metrics` over HTTP, with the plain client (a scrape is not a call Sluice should guard). */
export const scrape = (url: string): Effect.Effect<string, unknown, HttpClient.HttpClient> =>
  Effect.flatMap(HttpClient.get(`${url}/metrics`), (response) => response.text)

/** The `sluice_*` sample lines of a Prometheus text. */
export const sluiceSeries = (text: string): ReadonlyArray<string> =>
  text.split("\n").filter((line) => line.startsWith("sluice_"))

/**
 * OTLP export of metrics, traces and logs to `baseUrl` (`/v1/metrics`, `/v1/traces`, `/v1/logs`,
 * JSON over HTTP), or nothing when `baseUrl` is `undefined` or empty. The example passes
 * `OTEL_EXPORTER_OTLP_ENDPOINT`. (`Otlp.layerFromConfig` reads the standard variables too, but
 * sends a signal only when `OTEL_<SIGNAL>_EXPORTER=otlp` is also set.) What is buffered is
 * sent when the layer's scope closes.
 */
export const otlp = (baseUrl: string | undefined): Layer.Layer<OtlpExporter.Flusher> =>
  baseUrl === undefined || baseUrl === ""
    ? OtlpExporter.layerFlusher
    : Otlp.layerJson({ baseUrl, resource: { serviceName: "sluice-metrics-example" } }).pipe(
        Layer.provide(NodeHttpClient.layerUndici)
      )

const args = process.argv.slice(2)
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback
}

const main = Effect.gen(function* () {
  const server = yield* makeServer()
  const client = yield* makeClient
  const outcomes = yield* runLoad(client, server.url, {
    requests: Number(flag("requests", "400")),
    concurrency: Number(flag("concurrency", "32"))
  })
  const series = sluiceSeries(yield* scrape(server.url))
  if (args.includes("--json")) console.log(JSON.stringify({ url: server.url, outcomes, series }))
  else {
    console.log(`server ${server.url}; calls: ${JSON.stringify(outcomes)}`)
    console.log(`GET ${server.url}/metrics, the sluice_* series:`)
    for (const line of series) console.log(`  ${line}`)
  }
}).pipe(
  Effect.scoped,
  Effect.provide(Layer.merge(NodeHttpClient.layerUndici, otlp(process.env.OTEL_EXPORTER_OTLP_ENDPOINT)))
)

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  Effect.runPromise(main).then(
    () => process.exit(0),
    (error) => {
      console.error(error)
      process.exit(1)
    }
  )
}

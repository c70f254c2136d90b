import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Tracer } from "effect"
import { makeClient, makeServer, otlp, runLoad, scrape } from "./main.js"

/** One sample of a Prometheus text: its name, labels and value. */
interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

const parse = (text: string): ReadonlyArray<Sample> =>
  text
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
      if (match === null) throw new Error(`not a Prometheus sample: ${line}`)
      const labels: Record<string, string> = {}
      for (const [, key, value] of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
        labels[key!] = value!
      return { name: match[1]!, labels, value: Number(match[3]) }
    })

/** The samples of `name` whose labels include `labels`. */
type Match = string | ((value: string) => boolean)
const matches = (match: Match, value: string | undefined) =>
  value !== undefined && (typeof match === "string" ? value === match : match(value))
const select = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, Match> = {}) =>
  samples.filter(
    (sample) =>
      sample.name === name &&
      Object.entries(labels).every(([key, match]) => matches(match, sample.labels[key]))
  )
/** The sum of the samples of `name` whose labels include `labels` (0 when there are none). */
const sum = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, Match> = {}) =>
  select(samples, name, labels).reduce((total, sample) => total + sample.value, 0)

/** An in-memory tracer: every span it starts. */
const recording = () => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span(options) {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  return { spans, tracer }
}

// The real server on a loopback port and the real clock. The counts differ from run to run
// (and with the machine's load): the assertions are the relations between the series, which
// hold whatever the counts are, and that the load produced each kind of refusal.
describe("examples/metrics: Sluice's metrics through PrometheusMetrics, its spans in traces", () => {
  it.live("/metrics carries the sluice_* series, with their labels, consistent with what the calls saw", () =>
    Effect.gen(function* () {
      const server = yield* makeServer()
      const host = new URL(server.url).host
      const outcomes = yield* runLoad(yield* makeClient, server.url, { requests: 400, concurrency: 32 })
      const text = yield* scrape(server.url)
      const samples = parse(text)
      const calls = Object.values(outcomes).reduce((a, b) => a + b, 0)
      expect(calls).toBe(400)
      expect(outcomes["defect"]).toBeUndefined()

      // served as Prometheus text, with TYPE lines
      expect(text).toContain("# TYPE sluice_load_shedder_shed counter")
      expect(text).toContain("# TYPE sluice_concurrency_limiter_limit gauge")

      // the client's throttle and limiter keep their state per backend host and criticality level
      const ofHost = (key: string) => key.startsWith(`${host}/`)
      // limits: the client's limiter, per backend host and level
      const [limit] = select(samples, "sluice_concurrency_limiter_limit", { key: ofHost })
      expect(limit).toBeDefined()
      expect(limit!.value).toBeGreaterThanOrEqual(1)

      // throttle: its rejection probability per host and criticality, a probability
      const probabilities = select(samples, "sluice_adaptive_throttle_probability", { key: ofHost })
      expect([...new Set(probabilities.map((s) => s.labels["criticality"]))].sort()).toEqual([
        "CRITICAL",
        "CRITICAL_PLUS",
        "SHEDDABLE",
        "SHEDDABLE_PLUS"
      ])
      for (const p of probabilities) {
        expect(p.value).toBeGreaterThanOrEqual(0)
        expect(p.value).toBeLessThanOrEqual(1)
      }
      // every try went through the throttle: the retry policy's attempts are its requests
      const attempts = sum(samples, "sluice_retry_attempts", { policy: "metrics-example" })
      expect(attempts).toBeGreaterThan(calls)
      expect(sum(samples, "sluice_adaptive_throttle_requests", { key: ofHost })).toBe(attempts)
      expect(sum(samples, "sluice_adaptive_throttle_throttled", { key: ofHost })).toBe(
        outcomes["Throttled"] ?? 0
      )

      // retry budget: each denial is one call that gave up with DontRetry(budget)
      const withdrawals = sum(samples, "sluice_retry_budget_withdrawals", { policy: "metrics-example" })
      const denials = sum(samples, "sluice_retry_budget_denials", { policy: "metrics-example" })
      expect(withdrawals).toBeGreaterThan(0)
      expect(withdrawals).toBe(sum(samples, "sluice_retry_retries", { policy: "metrics-example" }))
      expect(withdrawals).toBe(attempts - calls)
      expect(denials).toBeGreaterThan(0)
      expect(denials).toBe(outcomes["DontRetry(budget)"])
      expect(sum(samples, "sluice_retry_give_ups", { policy: "metrics-example", reason: "budget" })).toBe(
        denials
      )

      // quota: every check is allowed or denied (by tier), by the store (source), which never fails
      const allowed = sum(samples, "sluice_quota_allowed_total", { source: "store" })
      const denied = sum(samples, "sluice_quota_denied_total", { tier: "spike", source: "store" })
      expect(denied).toBeGreaterThan(0)
      for (const decision of [
        ...select(samples, "sluice_quota_allowed_total"),
        ...select(samples, "sluice_quota_denied_total")
      ])
        expect(decision.labels["source"]).toBe("store")
      expect(allowed + denied).toBe(sum(samples, "sluice_quota_check_latency_ms_count"))
      expect(allowed).toBe(outcomes["200"])
      expect(sum(samples, "sluice_quota_fallback_total")).toBe(0)
      expect(sum(samples, "sluice_http_server_rejected", { reason: "QuotaExceeded" })).toBe(denied)

      // sheds by criticality: SHEDDABLE first; each one answered 503 by the middleware
      const shed = select(samples, "sluice_load_shedder_shed", { shedder: "example" })
      for (const s of shed) expect(["CRITICAL", "SHEDDABLE"]).toContain(s.labels["criticality"])
      const shedSheddable = sum(samples, "sluice_load_shedder_shed", {
        shedder: "example",
        criticality: "SHEDDABLE"
      })
      expect(shedSheddable).toBeGreaterThan(0)
      const shedTotal = shed.reduce((total, s) => total + s.value, 0)
      // the shedder's hard bound (a limiter keyed `load-shedder:example`) refuses the rest
      const boundRejected = sum(samples, "sluice_concurrency_limiter_rejected", {
        key: "load-shedder:example"
      })
      expect(sum(samples, "sluice_http_server_rejected", { reason: "Overloaded" })).toBe(
        shedTotal + boundRejected
      )
      // What reached the shedder was shed, refused at once by the bound (the fast path: a full
      // queue, never admitted) or admitted; an admitted request was checked by the quota or
      // refused by the bound later (displaced, timed out in its queue; rarely a queue that
      // filled between the fast path's look and the gate).
      const admitted = sum(samples, "sluice_load_shedder_admitted", { shedder: "example" })
      const boundLater = ["queue-timeout", "displaced", "deadline", "deadline-unmeetable"]
        .map((reason) =>
          sum(samples, "sluice_concurrency_limiter_rejected", { key: "load-shedder:example", reason })
        )
        .reduce((a, b) => a + b, 0)
      expect(admitted).toBeGreaterThanOrEqual(allowed + denied + boundLater)
      expect(admitted).toBeLessThanOrEqual(allowed + denied + boundRejected)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici))
  )

  it.live("a shed, a quota denial, a retry and a give-up are spans of the calls' traces", () =>
    Effect.gen(function* () {
      const { spans, tracer } = recording()
      const outcomes = yield* Effect.gen(function* () {
        const server = yield* makeServer()
        return yield* runLoad(yield* makeClient, server.url, { requests: 200, concurrency: 32 })
      }).pipe(Effect.provideService(Tracer.Tracer, tracer))
      const named = (name: string) => spans.filter((span) => span.name === name)
      // one trace per call (runLoad's span "example.call")
      const calls = named("example.call")
      expect(calls.length).toBe(200)
      const clientTraces = new Set(calls.map((span) => span.traceId))
      expect(clientTraces.size).toBe(200)

      // a shed opens no span of its own (it would cost more than the refusal): the request's
      // server span says why it was refused, and at which level
      const sheds = spans.filter((span) => span.attributes.get("sluice.refused") === "shed")
      expect(sheds.length).toBeGreaterThan(0)
      expect(sheds.some((span) => span.attributes.get("sluice.criticality") === "SHEDDABLE")).toBe(true)

      const denials = named("sluice.http.quota_denied")
      expect(denials.length).toBeGreaterThan(0)
      for (const span of denials) {
        expect(span.attributes.get("client")).toBe("noisy")
        expect(span.attributes.get("tier")).toBe("spike")
      }

      // the server's spans continue the client's traces (traceparent): a shed or a quota
      // denial is found in the trace of the call that was refused
      for (const span of [...sheds, ...denials]) expect(clientTraces.has(span.traceId)).toBe(true)

      // each retry runs in its own span, around the request it sends again
      const retries = named("sluice.retry.attempt")
      expect(retries.length).toBeGreaterThan(0)
      for (const span of retries) {
        expect(span.attributes.get("sluice.retry.policy")).toBe("metrics-example")
        expect(clientTraces.has(span.traceId)).toBe(true)
      }

      // every call that gave up did so in a give-up span naming its reason: the quota's 429s
      // (not retried: their Retry-After is past maxRetryAfter), the retries the budget refused
      const giveUps = named("sluice.retry.give_up")
      const gaveUp = Object.entries(outcomes).filter(([outcome]) => outcome.startsWith("DontRetry("))
      expect(giveUps.length).toBe(gaveUp.reduce((total, [, n]) => total + n, 0))
      expect(giveUps.length).toBeGreaterThan(0)
      for (const [outcome, n] of gaveUp) {
        const reason = outcome.slice("DontRetry(".length, -1)
        expect(giveUps.filter((span) => span.attributes.get("sluice.retry.reason") === reason).length).toBe(n)
      }
      for (const span of giveUps) {
        expect(span.attributes.get("sluice.retry.policy")).toBe("metrics-example")
        expect(clientTraces.has(span.traceId)).toBe(true)
      }

      const throttled = named("sluice.adaptive_throttle.throttled")
      expect(throttled.length).toBe(outcomes["Throttled"] ?? 0)
      for (const span of throttled) {
        expect(span.attributes.get("probability")).toBeGreaterThan(0)
        expect(clientTraces.has(span.traceId)).toBe(true)
      }
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici))
  )

  it.live(
    "with an OTLP endpoint, the sluice_* metrics and the spans are sent to it; without one, nothing is",
    () =>
      Effect.gen(function* () {
        // a stand-in collector on a loopback port: what was posted, by path
        const received: Record<string, string> = {}
        const collector = yield* Effect.acquireRelease(
          Effect.callback<ReturnType<typeof createServer>>((resume) => {
            const server = createServer((request, response) => {
              let body = ""
              request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")))
              request.on("end", () => {
                received[request.url ?? ""] = (received[request.url ?? ""] ?? "") + body
                response.writeHead(200, { "content-type": "application/json" }).end("{}")
              })
            })
            server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
          }),
          (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
        )
        const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`
        const run = (baseUrl: string | undefined) =>
          Effect.gen(function* () {
            const server = yield* makeServer()
            return yield* runLoad(yield* makeClient, server.url, { requests: 100, concurrency: 32 })
          }).pipe(Effect.scoped, Effect.provide(otlp(baseUrl)))

        yield* run(undefined)
        expect(received).toEqual({})

        // the exporters send what they buffered when their layer's scope closes
        const outcomes = yield* run(endpoint)
        expect(Object.keys(received).sort()).toEqual(expect.arrayContaining(["/v1/metrics", "/v1/traces"]))
        const metrics = received["/v1/metrics"]!
        for (const name of [
          "sluice_concurrency_limiter_limit",
          "sluice_adaptive_throttle_probability",
          "sluice_retry_attempts",
          "sluice_quota_allowed_total",
          "sluice_load_shedder_admitted"
        ])
          expect(metrics).toContain(`"${name}"`)
        const traces = received["/v1/traces"]!
        expect(traces).toContain('"sluice.http.quota_denied"')
        if ((outcomes["DontRetry(budget)"] ?? 0) > 0) expect(traces).toContain('"sluice.retry.give_up"')
      }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici))
  )
})

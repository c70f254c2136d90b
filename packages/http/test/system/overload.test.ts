/**
 * System tests: against a backend that really is overloaded, the client backs
 * off (the throttle engages, retries stay within the budget) and protects its
 * most critical work.
 *
 * Real `NodeHttpServer` on 127.0.0.1 + `SluiceHttpClient` over undici, with the
 * default policies (congestion window, adaptive throttle, retry budget, backoff).
 * Invariants are counts and shares, never durations.
 *
 * API assumptions (beyond today's code):
 * - Metric names and labels: `sluice_retry_retries`,
 *   `sluice_retry_budget_withdrawals` and `sluice_retry_budget_refunds` carry `policy = <client name>`;
 *   `sluice_adaptive_throttle_throttled` carries `key = <host:port>` and
 *   `criticality`.
 * - `x-sluice-criticality` carries the caller's `Criticality.currentCriticality`
 *   (as today), so a server that sheds by criticality sees it.
 */
import { HttpRouter, HttpServerResponse } from "effect/http"
import { describe, expect, it } from "@effect/vitest"
import { Criticality } from "@sluice/core"
import { Middleware, SluiceHttpClient } from "@sluice/http"
import { Effect } from "effect"
import type { Exit } from "effect"
import {
  Arrivals,
  clientLayer,
  inRounds,
  counters,
  describeError,
  report,
  serve,
  tally,
  routes
} from "./harness.js"

// The budget the client runs with, and the bound on retries it implies over a run
// shorter than its window: ratio × requests + minRetriesPerSecond × window.
const budget = { ratio: 0.1, minRetriesPerSecond: 1, window: "10 seconds" } as const
const WINDOW_SECONDS = 10
const retryBound = (requests: number) => budget.ratio * requests + budget.minRetriesPerSecond * WINDOW_SECONDS

describe("system: an overloaded backend", () => {
  it.live(
    "a server that sheds most requests: the throttle engages and retries stay within 10% of requests (+ the floor)",
    () => {
      const name = "system-overloaded"
      return Effect.gen(function* () {
        const arrivals = new Arrivals()
        // It accepts one request in four (20 ms of work) and sheds the others at once.
        const app = yield* routes(
          HttpRouter.route(
            "GET",
            "/work",
            Effect.andThen(
              arrivals.record("work"),
              Effect.suspend(() => {
                if (arrivals.route("work") % 4 !== 1) {
                  arrivals.add("shed")
                  return Effect.succeed(HttpServerResponse.empty({ status: 503 }))
                }
                return Effect.as(Effect.sleep("20 millis"), HttpServerResponse.text("ok"))
              })
            )
          )
        )
        const { base, host } = yield* serve(app)
        const client = yield* SluiceHttpClient.SluiceHttpClient
        const metrics = yield* counters({
          retries: ["sluice_retry_retries", { policy: name }],
          withdrawals: ["sluice_retry_budget_withdrawals", { policy: name }],
          refunds: ["sluice_retry_budget_refunds", { policy: name }],
          throttled: ["sluice_adaptive_throttle_throttled", { key: `${host}/CRITICAL` }]
        })

        // 8 rounds of 30 concurrent calls: 240 requests, over the throttle's
        // low-traffic guard (120 requests in its window).
        const rounds = 8
        const perRound = 30
        const exits = yield* inRounds(rounds, perRound, () => client.get(`${base}/work`))
        const calls = tally(exits)
        const delta = yield* metrics.delta
        const requests = rounds * perRound
        const bound = retryBound(requests)
        const figures = {
          ...calls,
          failures: [...new Set(calls.failures.map(describeError))].slice(0, 4),
          arrivals: arrivals.total,
          shed: arrivals.count("shed"),
          serverRetries: arrivals.retries,
          ...delta,
          bound
        }
        yield* report("overloaded", figures)

        const summary = JSON.stringify(figures)
        // The server was overloaded: it shed most of what reached it...
        expect(arrivals.count("shed"), summary).toBeGreaterThan(arrivals.total / 2)
        // ...and the client noticed: some calls failed locally with Throttled.
        expect(calls.throttled, summary).toBeGreaterThan(0)
        expect(delta.throttled, summary).toBeGreaterThan(0)
        // Retries stayed within the budget: ≤ 10% of requests + the floor. A retry the
        // throttle then refused here is given back (it never left), so more may be scheduled;
        // what the budget keeps, and what reached the server, stays within it.
        expect(delta.retries, summary).toBeGreaterThan(0)
        expect(delta.withdrawals - delta.refunds, summary).toBeLessThanOrEqual(bound)
        expect(arrivals.retries, summary).toBeLessThanOrEqual(bound)
      }).pipe(Effect.provide(clientLayer({ name, budget })))
    }
  )

  it.live(
    "CRITICAL and SHEDDABLE callers against an overloaded backend: CRITICAL succeeds at least as often as SHEDDABLE",
    () => {
      const name = "system-criticality"
      return Effect.gen(function* () {
        const arrivals = new Arrivals()
        // A backend that sheds by criticality, as a Sluice server does, and is short of
        // capacity: 2 slots of 20 ms; SHEDDABLE work is admitted only while both are free.
        let busy = 0
        const app = yield* routes(
          HttpRouter.route(
            "GET",
            "/work",
            Effect.andThen(
              arrivals.record("work"),
              Effect.flatMap(Criticality.current, (level) =>
                Effect.suspend(() => {
                  arrivals.add(`arrived:${level}`)
                  if (busy >= (level === "SHEDDABLE" ? 1 : 2)) {
                    return Effect.succeed(HttpServerResponse.empty({ status: 503 }))
                  }
                  busy++
                  return Effect.sleep("20 millis").pipe(
                    Effect.as(HttpServerResponse.text("ok")),
                    Effect.ensuring(Effect.sync(() => busy--))
                  )
                })
              )
            )
          )
        )
        const { base, host } = yield* serve(app.pipe(Middleware.criticality({ trust: () => true })))
        const client = yield* SluiceHttpClient.SluiceHttpClient
        const metrics = yield* counters({
          throttledCritical: [
            "sluice_adaptive_throttle_throttled",
            { key: `${host}/CRITICAL`, criticality: "CRITICAL" }
          ],
          throttledSheddable: [
            "sluice_adaptive_throttle_throttled",
            { key: `${host}/SHEDDABLE`, criticality: "SHEDDABLE" }
          ]
        })

        // 10 rounds of 24 concurrent calls, CRITICAL and SHEDDABLE interleaved.
        const rounds = 10
        const perRound = 24
        const critical: Array<Exit.Exit<unknown, unknown>> = []
        const sheddable: Array<Exit.Exit<unknown, unknown>> = []
        for (let round = 0; round < rounds; round++) {
          const exits = yield* Effect.forEach(
            Array.from({ length: perRound }, (_, i): Criticality.Criticality =>
              i % 2 === 0 ? "CRITICAL" : "SHEDDABLE"
            ),
            (level) =>
              Effect.map(
                Effect.exit(client.get(`${base}/work`).pipe(Criticality.withCriticality(level))),
                (exit) => [level, exit] as const
              ),
            { concurrency: "unbounded" }
          )
          for (const [level, exit] of exits) (level === "CRITICAL" ? critical : sheddable).push(exit)
        }
        const crit = tally(critical)
        const shed = tally(sheddable)
        const delta = yield* metrics.delta
        const share = (t: typeof crit) => t.succeeded / t.calls
        const figures = {
          critical: { ...crit, failures: [...new Set(crit.failures.map(describeError))].slice(0, 3) },
          sheddable: { ...shed, failures: [...new Set(shed.failures.map(describeError))].slice(0, 3) },
          successShare: { critical: share(crit), sheddable: share(shed) },
          arrivals: {
            CRITICAL: arrivals.count("arrived:CRITICAL"),
            SHEDDABLE: arrivals.count("arrived:SHEDDABLE")
          },
          serverRetries: arrivals.retries,
          ...delta
        }
        yield* report("criticality", figures)

        const summary = JSON.stringify(figures)
        // The criticality reached the server, and the backend was overloaded.
        expect(arrivals.count("arrived:CRITICAL"), summary).toBeGreaterThan(0)
        expect(arrivals.count("arrived:SHEDDABLE"), summary).toBeGreaterThan(0)
        expect(crit.succeeded + shed.succeeded, summary).toBeLessThan(rounds * perRound)
        // CRITICAL succeeds at least as often, as a share, as SHEDDABLE...
        expect(share(crit), summary).toBeGreaterThanOrEqual(share(shed))
        // ...and is not throttled locally more than SHEDDABLE (10 points of slack for
        // the throttle's random draws).
        expect(crit.throttled / crit.calls, summary).toBeLessThanOrEqual(shed.throttled / shed.calls + 0.1)
      }).pipe(Effect.provide(clientLayer({ name, budget })))
    }
  )
})

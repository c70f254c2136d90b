/**
 * System tests: refusals of the client's own policies and callers' cancellations
 * are never mistaken for backend overload.
 *
 * Real `NodeHttpServer` on 127.0.0.1 + `SluiceHttpClient` over undici, composed as
 * the README composes it. Invariants are counts, never timings.
 *
 * API assumptions (beyond today's code):
 * - Metric names and labels: `sluice_retry_retries` and
 *   `sluice_retry_budget_withdrawals` carry `policy = <client name>`;
 *   `sluice_adaptive_throttle_throttled` and `sluice_adaptive_throttle_probability`
 *   carry `key = <host:port>` and `criticality`; the probability gauge holds the
 *   probability the throttle computed for the latest request it admitted.
 */
import { HttpRouter, HttpServerResponse } from "effect/http"
import { describe, expect, it } from "@effect/vitest"
import { LimitAlgorithm } from "@sluice/adaptive"
import { SluiceHttpClient } from "@sluice/http"
import { Effect } from "effect"
import {
  Arrivals,
  clientLayer,
  inRounds,
  counters,
  describeError,
  gaugeValue,
  report,
  serve,
  tally,
  routes
} from "./harness.js"

describe("system: local refusals and cancellations are not backend overload", () => {
  it.live(
    "a tiny client limit against a healthy server: queue-full refusals fail the call, nothing else (no Throttled, no retry, no budget)",
    () => {
      const name = "system-tiny-limit"
      return Effect.gen(function* () {
        const arrivals = new Arrivals()
        const app = yield* routes(
          HttpRouter.route(
            "GET",
            "/items",
            Effect.andThen(
              arrivals.record("items"),
              Effect.as(Effect.sleep("20 millis"), HttpServerResponse.text("ok"))
            )
          )
        )
        const { base, host } = yield* serve(app)
        const client = yield* SluiceHttpClient.SluiceHttpClient
        const metrics = yield* counters({
          retries: ["sluice_retry_retries", { policy: name }],
          withdrawals: ["sluice_retry_budget_withdrawals", { policy: name }],
          throttled: ["sluice_adaptive_throttle_throttled", { key: `${host}/CRITICAL` }]
        })

        const rounds = 6
        const perRound = 40
        const exits = yield* inRounds(rounds, perRound, () => client.get(`${base}/items`))
        const calls = tally(exits)
        const delta = yield* metrics.delta
        // One more request reads the throttle's probability as of now (the gauge is
        // set when a request is admitted).
        const probe = yield* Effect.exit(client.get(`${base}/items`))
        const probability = yield* gaugeValue("sluice_adaptive_throttle_probability", {
          key: `${host}/CRITICAL`,
          criticality: "CRITICAL"
        })
        const figures = {
          ...calls,
          failures: calls.failures.slice(0, 3).map(describeError),
          arrivals: arrivals.total,
          serverRetries: arrivals.retries,
          ...delta,
          probability,
          probe: probe._tag
        }
        yield* report("tiny limit", figures)

        const summary = JSON.stringify(figures)
        // The limit (2) and queue (2) were exceeded: some calls were refused locally.
        expect(calls.failed, summary).toBeGreaterThan(0)
        // ...and none of those refusals was taken for overload:
        expect(calls.throttled, summary).toBe(0)
        expect(delta.throttled, summary).toBe(0)
        expect(probability ?? 0, summary).toBe(0)
        expect(probe._tag, summary).toBe("Success")
        // never retried, and no budget spent on them
        expect(arrivals.retries, summary).toBe(0)
        expect(delta.retries, summary).toBe(0)
        expect(delta.withdrawals, summary).toBe(0)
        // every call that reached the server succeeded; every refusal stayed local
        expect(arrivals.total, summary).toBe(calls.succeeded + 1)
        expect(calls.succeeded + calls.failed, summary).toBe(rounds * perRound)
      }).pipe(
        Effect.provide(
          clientLayer({ name, limiter: { algorithm: () => LimitAlgorithm.fixed(2), maxQueue: 2 } })
        )
      )
    }
  )

  it.live(
    "callers interrupt 80% of calls to a slow but healthy server: the throttle stays at 0, later calls are never Throttled",
    () => {
      const name = "system-cancellations"
      return Effect.gen(function* () {
        const arrivals = new Arrivals()
        const app = yield* routes(
          HttpRouter.route(
            "GET",
            "/slow",
            Effect.andThen(
              arrivals.record("slow"),
              Effect.as(Effect.sleep("300 millis"), HttpServerResponse.text("ok"))
            )
          ),
          HttpRouter.route("GET", "/fast", Effect.as(arrivals.record("fast"), HttpServerResponse.text("ok")))
        )
        const { base, host } = yield* serve(app)
        const client = yield* SluiceHttpClient.SluiceHttpClient
        const metrics = yield* counters({
          retries: ["sluice_retry_retries", { policy: name }],
          throttled: ["sluice_adaptive_throttle_throttled", { key: `${host}/CRITICAL` }]
        })

        // 5 waves of 40 calls; in each, 4 of 5 callers give up after 30 ms (the
        // server takes 300 ms): 160 interrupted calls, 40 completed, 200 in all
        // (over the throttle's low-traffic guard of 120 requests in its window).
        const waves = 5
        const perWave = 40
        const early = []
        for (let wave = 0; wave < waves; wave++) {
          early.push(
            ...(yield* Effect.forEach(
              Array.from({ length: perWave }, (_, i) => i),
              (i) => {
                const call = client.get(`${base}/slow`)
                return Effect.exit(i % 5 === 0 ? call : Effect.timeout(call, "30 millis"))
              },
              { concurrency: "unbounded" }
            ))
          )
        }
        const before = tally(early)
        // Later calls to the same host: none may be refused by the throttle.
        const later = tally(
          yield* Effect.forEach(Array.from({ length: 40 }), () => Effect.exit(client.get(`${base}/fast`)), {
            concurrency: 4
          })
        )
        const delta = yield* metrics.delta
        const probability = yield* gaugeValue("sluice_adaptive_throttle_probability", {
          key: `${host}/CRITICAL`,
          criticality: "CRITICAL"
        })
        const figures = {
          early: { ...before, failures: before.failures.slice(0, 3).map(describeError) },
          later: { ...later, failures: later.failures.slice(0, 3).map(describeError) },
          arrivals: Object.fromEntries(arrivals.byRoute),
          serverRetries: arrivals.retries,
          ...delta,
          probability
        }
        yield* report("cancellations", figures)

        const summary = JSON.stringify(figures)
        // No call, interrupted or not, was refused by the throttle.
        expect(before.throttled, summary).toBe(0)
        expect(later.succeeded, summary).toBe(40)
        expect(later.throttled, summary).toBe(0)
        expect(delta.throttled, summary).toBe(0)
        expect(probability ?? 0, summary).toBe(0)
        // The callers did give up on most calls (the TimeoutError of their own timeout).
        expect(before.failed + before.throttled, summary).toBeGreaterThanOrEqual(100)
        // Cancellations are not retried.
        expect(arrivals.retries, summary).toBe(0)
        expect(delta.retries, summary).toBe(0)
      }).pipe(Effect.provide(clientLayer({ name })))
    }
  )
})

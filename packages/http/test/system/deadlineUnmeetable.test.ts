/**
 * System test: a server's admission queue refuses a waiter whose deadline cannot be met.
 *
 * One server, one permit (`LimitAlgorithm.fixed(1)`) behind `Middleware.loadShed`, reading the
 * caller's `x-sluice-deadline-ms` in `Middleware.criticality`. Three slow requests (300 ms each,
 * the others queued behind the first) teach the limiter its service time; then a request that
 * holds the permit until the test lets it go, and, behind it, requests whose time left (200 ms)
 * is below that estimate, and one with 10 s to spare.
 *
 * Invariants over real sockets (no timings): every request that could not be served in its time
 * is answered 503 with `x-sluice-dont-retry`, its handler never runs, and the server counts it
 * apart (`sluice_http_server_expired_total{stage="unmeetable"}`, or `{stage="queue"}` on a
 * machine stalled past the whole 200 ms); the request with time to spare waits and is served.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConcurrencyLimiter, LimitAlgorithm } from "@sluice/adaptive"
import { Middleware, Trust } from "@sluice/http"
import { Deferred, Effect, Fiber } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { counters, report, routes, serve } from "./harness.js"

const SERVICE_MS = 300
const SHORT_MS = 200
const SHORT_CALLS = 6

describe("system: the admission queue refuses a waiter whose deadline cannot be met", () => {
  it.live("refused at once with don't-retry, counted apart, its handler never run", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({
        key: "deadline-unmeetable",
        maxQueue: 16,
        algorithm: () => LimitAlgorithm.fixed(1)
      })
      const latch = yield* Deferred.make<void>()
      const ran = { slow: 0, block: 0, short: 0, spare: 0 }
      const app = (yield* routes(
        HttpRouter.route(
          "GET",
          "/slow",
          Effect.sync(() => ran.slow++).pipe(
            Effect.andThen(Effect.sleep(SERVICE_MS)),
            Effect.as(HttpServerResponse.text("slow"))
          )
        ),
        HttpRouter.route(
          "GET",
          "/block",
          Effect.sync(() => ran.block++).pipe(
            Effect.andThen(Deferred.await(latch)),
            Effect.as(HttpServerResponse.text("block"))
          )
        ),
        HttpRouter.route(
          "GET",
          "/short",
          Effect.sync(() => ran.short++).pipe(Effect.as(HttpServerResponse.text("short")))
        ),
        HttpRouter.route(
          "GET",
          "/spare",
          Effect.sync(() => ran.spare++).pipe(Effect.as(HttpServerResponse.text("spare")))
        )
      )).pipe(
        Middleware.loadShed({ limiter }),
        Middleware.mapErrors,
        Middleware.criticality({ trust: Trust.everyone, deadline: { margin: "0 millis" } })
      )
      const { base } = yield* serve(app)
      const get = (path: string, deadlineMs?: number) =>
        Effect.promise(async () => {
          const response = await fetch(
            `${base}${path}`,
            deadlineMs === undefined ? {} : { headers: { "x-sluice-deadline-ms": String(deadlineMs) } }
          )
          return {
            status: response.status,
            dontRetry: response.headers.get("x-sluice-dont-retry"),
            body: await response.text()
          }
        })
      const expired = yield* counters({
        unmeetable: ["sluice_http_server_expired", { stage: "unmeetable" }],
        queue: ["sluice_http_server_expired", { stage: "queue" }],
        arrival: ["sluice_http_server_expired", { stage: "arrival" }]
      })

      // The estimate: one slow request timed while another waited for its permit.
      const warm = yield* Effect.all([get("/slow"), get("/slow"), get("/slow")], { concurrency: "unbounded" })
      expect(warm.map((r) => r.status)).toEqual([200, 200, 200])
      const estimate = limiter.serviceTime
      expect(estimate).toBeGreaterThanOrEqual(SERVICE_MS)

      // The permit held until the test lets it go.
      const block = yield* Effect.forkChild(get("/block"))
      while (limiter.inFlight < 1) yield* Effect.sleep(5)
      const spare = yield* Effect.forkChild(get("/spare", 10_000))
      while (limiter.queued < 1) yield* Effect.sleep(5)
      const short = yield* Effect.all(
        Array.from({ length: SHORT_CALLS }, () => get("/short", SHORT_MS)),
        { concurrency: "unbounded" }
      )
      yield* Deferred.succeed(latch, undefined)
      const served = (yield* Effect.all([Fiber.join(block), Fiber.join(spare)])).map((r) => r.status)
      const figures = {
        estimate,
        short: short.map((r) => `${r.status} ${r.dontRetry} ${r.body}`),
        served,
        ran,
        expired: yield* expired.delta
      }
      yield* report("deadline cannot be met", figures)
      const summary = JSON.stringify(figures)
      for (const r of short) {
        expect(r.status, summary).toBe(503)
        expect(r.dontRetry, summary).toBe("1")
      }
      expect(ran.short, summary).toBe(0)
      expect(figures.expired.unmeetable + figures.expired.queue, summary).toBe(SHORT_CALLS)
      expect(figures.expired.unmeetable, summary).toBeGreaterThan(0)
      expect(
        short.some((r) => r.body.includes("deadline-unmeetable")),
        summary
      ).toBe(true)
      expect(served, summary).toEqual([200, 200])
      expect(ran.spare, summary).toBe(1)
      expect(limiter.inFlight).toBe(0)
      expect(limiter.queued).toBe(0)
    })
  )
})

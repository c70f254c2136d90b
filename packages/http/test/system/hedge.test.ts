/**
 * System test: hedged GETs over real sockets. The backend answers a first try slowly and a
 * hedge at once; the client hedges after 50 ms (from its first call:
 * `minSamples: 0`). The hedge wins, the first try's connection is
 * cancelled (the server's handler sees the interruption), no limiter permit is left behind, and
 * a POST (not idempotent) is never hedged.
 *
 * Real sockets; invariants and generous bounds, not timings.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConcurrencyLimiter } from "@sluice/adaptive"
import { SluiceHttpClient } from "@sluice/http"
import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { Arrivals, clientLayer, metricSum, routes, serve } from "./harness.js"

/** Polls `done` every 10 ms until it holds, at most `guardMs` (a guard, not a bound on time). */
const eventually = (done: () => boolean, guardMs = 10_000) =>
  Effect.promise(async () => {
    for (let waited = 0; !done() && waited < guardMs; waited += 10)
      await new Promise((r) => setTimeout(r, 10))
    return done()
  })

const CALLS = 5

describe("system: hedged requests", () => {
  it.live("the hedge wins; the loser's connection is cancelled at the server; no permit leaks", () =>
    Effect.gen(function* () {
      const arrivals = new Arrivals()
      let cancelled = 0
      let slowDone = 0
      // A first try stalls 3 s (the tail), a hedge answers at once.
      const handler = (route: string) =>
        Effect.flatMap(arrivals.record(route), (attempt) =>
          attempt === 0
            ? Effect.sleep("3 seconds").pipe(
                Effect.tap(() => Effect.sync(() => slowDone++)),
                Effect.onInterrupt(() => Effect.sync(() => cancelled++)),
                Effect.as(HttpServerResponse.text("slow"))
              )
            : Effect.succeed(HttpServerResponse.text(`hedge ${attempt}`))
        )
      const app = yield* routes(
        HttpRouter.route("GET", "/read", handler("read")),
        HttpRouter.route("POST", "/write", handler("write"))
      )
      const { base, host } = yield* serve(app)
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const bodies: Array<string> = []
      for (let i = 0; i < CALLS; i++) {
        const response = yield* client.get(`${base}/read`)
        bodies.push(yield* response.text)
      }
      expect(bodies).toEqual(Array.from({ length: CALLS }, () => "hedge 1"))
      expect(arrivals.route("read")).toBe(2 * CALLS)
      expect(arrivals.retriesOf("read")).toBe(CALLS)
      // The server sees every loser go: its handler is interrupted, none runs to its end.
      expect(yield* eventually(() => cancelled === CALLS)).toBe(true)
      expect(slowDone).toBe(0)
      const limiters = yield* ConcurrencyLimiter.ConcurrencyLimiter
      expect((yield* limiters.get(host)).inFlight).toBe(0)
      expect(yield* metricSum("sluice_hedge_sent", { policy: "system-hedge" })).toBe(CALLS)
      expect(yield* metricSum("sluice_hedge_won", { policy: "system-hedge" })).toBe(CALLS)
      // A POST is not hedged: one arrival, answered by the slow path.
      const post = yield* client.post(`${base}/write`)
      expect(yield* post.text).toBe("slow")
      expect(arrivals.route("write")).toBe(1)
      expect((yield* limiters.get(host)).inFlight).toBe(0)
    }).pipe(
      Effect.scoped,
      Effect.provide(
        clientLayer({ name: "system-hedge", maxAttempts: 2, hedge: { delay: "50 millis", minSamples: 0 } })
      )
    )
  )

  it.live("no hedge for a call that failed once, nor to a host that just failed an attempt", () =>
    Effect.gen(function* () {
      const arrivals = new Arrivals()
      let failFirst = true
      // /flaky answers its very first attempt 503 at once; every other attempt takes 400 ms (well
      // past the 50 ms hedge delay).
      const slow = (route: string) =>
        Effect.flatMap(arrivals.record(route), () => {
          if (route === "flaky" && failFirst) {
            failFirst = false
            return Effect.succeed(HttpServerResponse.text("busy", { status: 503 }))
          }
          return Effect.as(Effect.sleep("400 millis"), HttpServerResponse.text("ok"))
        })
      const app = yield* routes(
        HttpRouter.route("GET", "/flaky", slow("flaky")),
        HttpRouter.route("GET", "/read", slow("read"))
      )
      const { base } = yield* serve(app)
      const client = yield* SluiceHttpClient.SluiceHttpClient
      // The first try fails (503): no hedge during its retry (the call failed once), nor for the
      // next call to the host (paused after a failed attempt).
      expect(yield* Effect.flatMap(client.get(`${base}/flaky`), (r) => r.text)).toBe("ok")
      expect(arrivals.route("flaky")).toBe(2)
      expect(yield* Effect.flatMap(client.get(`${base}/read`), (r) => r.text)).toBe("ok")
      expect(arrivals.route("read")).toBe(1)
      expect(yield* metricSum("sluice_hedge_sent", { policy: "system-hedge-paused" })).toBe(0)
      expect(
        yield* metricSum("sluice_hedge_refused", { policy: "system-hedge-paused", reason: "paused" })
      ).toBe(1)
    }).pipe(
      Effect.scoped,
      Effect.provide(
        clientLayer({
          name: "system-hedge-paused",
          maxAttempts: 2,
          hedge: { delay: "50 millis", minSamples: 0 }
        })
      )
    )
  )

  it.live("no hedge while the host's last answer carried the throttle signal", () =>
    Effect.gen(function* () {
      const arrivals = new Arrivals()
      const app = yield* routes(
        HttpRouter.route(
          "GET",
          "/throttling",
          Effect.flatMap(arrivals.record("throttling"), () =>
            Effect.sleep("400 millis").pipe(
              Effect.as(HttpServerResponse.text("ok", { headers: { "x-sluice-throttle": "1" } }))
            )
          )
        )
      )
      const { base } = yield* serve(app)
      const client = yield* SluiceHttpClient.SluiceHttpClient
      // The first call is hedged (nothing known yet); its answer says throttle: the second is not.
      yield* Effect.flatMap(client.get(`${base}/throttling`), (r) => r.text)
      expect(arrivals.route("throttling")).toBe(2)
      yield* Effect.flatMap(client.get(`${base}/throttling`), (r) => r.text)
      expect(arrivals.route("throttling")).toBe(3)
    }).pipe(
      Effect.scoped,
      Effect.provide(
        clientLayer({
          name: "system-hedge-throttle",
          maxAttempts: 2,
          hedge: { delay: "50 millis", minSamples: 0 }
        })
      )
    )
  )
})

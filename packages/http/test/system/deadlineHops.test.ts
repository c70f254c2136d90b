/**
 * System test: a deadline crosses the hops A → B → C, and no hop works for a caller that has
 * given up.
 *
 * A (the test) calls B with a 1.5 s timeout through a `SluiceHttpClient`; B's handler calls
 * C through its own `SluiceHttpClient`, with no timeout of its own and no deadline code in the
 * handler; C serves one request at a time (150 ms each) behind `Middleware.loadShed` with a
 * queue of 8 that would let a request wait 30 s. Both servers trust their caller and read the
 * deadline in `Middleware.criticality` (margin 250 ms: a relative deadline does not count the
 * time between an attempt's send and the server reading it, which a busy machine stretches:
 * 76 ms per hop was seen at load 4 on 2 cores).
 * 24 calls at once offer C far more than it can serve
 * before A gives up.
 *
 * Invariants: no handler on C starts after the deadline A gave its call (A's deadline is sent
 * as an absolute time in a test header, forwarded by B's handler, and read by C's handler);
 * no request from B reaches C after A's deadline (B's retries die with A's deadline); every
 * call of A ends by its timeout, without a retry of A's own; and C's queue refused waiters at
 * their deadline or once it could not be met (`sluice_http_server_expired_total{stage="queue"}`,
 * `{stage="unmeetable"}`). With the header ignored
 * (`deadline: false`), C's queue keeps the requests and runs their handlers for nobody.
 *
 * Real sockets; invariants, not timings (the final drain is bounded by a generous guard).
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { ConcurrencyLimiter, LimitAlgorithm } from "@sluice/adaptive"
import { Middleware, SluiceHttpClient, Trust } from "@sluice/http"
import { Clock, Effect, Layer, Schedule } from "effect"
import { HttpClientRequest, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import {
  clientLayer,
  describeError,
  counters,
  failureOf,
  isTimeout,
  report,
  routes,
  serve
} from "./harness.js"

type DeadlineOption = false | { readonly margin: "250 millis" }

const A_DEADLINE = "x-test-a-deadline"
const CALLS = 24
const TIMEOUT_MS = 1500
const SERVICE_MS = 150

interface AtC {
  arrivalsAfterDeadline: number
  startsAfterDeadline: number
  starts: number
  running: number
}

const aDeadlineOf = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
  Number(request.headers[A_DEADLINE] ?? Infinity)
)

const tierC = (at: AtC, deadlineOption: DeadlineOption) =>
  Effect.gen(function* () {
    const limiter = yield* ConcurrencyLimiter.make({
      key: "deadline-hops-c",
      maxQueue: 8,
      maxWait: "30 seconds",
      algorithm: () => LimitAlgorithm.fixed(1)
    })
    const handler = Effect.gen(function* () {
      const aDeadline = yield* aDeadlineOf
      at.starts++
      if ((yield* Clock.currentTimeMillis) > aDeadline) at.startsAfterDeadline++
      at.running++
      yield* Effect.sleep(SERVICE_MS).pipe(Effect.ensuring(Effect.sync(() => at.running--)))
      return HttpServerResponse.text("c")
    })
    const recordArrival = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
      Effect.flatMap(Effect.zip(aDeadlineOf, Clock.currentTimeMillis), ([aDeadline, now]) => {
        if (now > aDeadline) at.arrivalsAfterDeadline++
        return app
      })
    const app = (yield* routes(HttpRouter.route("GET", "/work", handler))).pipe(
      Middleware.loadShed({ limiter }),
      Middleware.mapErrors,
      Middleware.criticality({ trust: Trust.everyone, deadline: deadlineOption }),
      recordArrival
    )
    return { app, limiter }
  })

const tierB = (client: SluiceHttpClient.Client, c: string, deadlineOption: DeadlineOption) =>
  Effect.map(
    routes(
      HttpRouter.route(
        "GET",
        "/work",
        Effect.gen(function* () {
          // The test's own header, forwarded so that C can judge against A's deadline; the
          // deadline itself needs no code here.
          const aDeadline = (yield* HttpServerRequest.HttpServerRequest).headers[A_DEADLINE] ?? ""
          const response = yield* client.execute(
            HttpClientRequest.get(`${c}/work`).pipe(HttpClientRequest.setHeader(A_DEADLINE, aDeadline))
          )
          return HttpServerResponse.text(yield* response.text)
        })
      )
    ),
    (app) =>
      app.pipe(
        Middleware.mapErrors,
        Middleware.criticality({ trust: Trust.everyone, deadline: deadlineOption })
      )
  )

const run = (deadlineOption: DeadlineOption) =>
  Effect.gen(function* () {
    const at: AtC = { arrivalsAfterDeadline: 0, startsAfterDeadline: 0, starts: 0, running: 0 }
    const c = yield* tierC(at, deadlineOption)
    const { base: cBase } = yield* serve(c.app)
    const undici = yield* Layer.build(NodeHttpClient.layerUndici)
    // B retries C's 503s (a full queue) at once, with budget to spare: only the deadline stops it.
    const clientB = yield* SluiceHttpClient.makeDefault({
      name: "deadline-hops-b",
      schedule: Schedule.spaced("20 millis"),
      budget: { minRetriesPerSecond: 1000 },
      throttle: false,
      limiter: false
    }).pipe(Effect.provide(undici), Effect.orDie)
    const { base: bBase } = yield* serve(yield* tierB(clientB, cBase, deadlineOption))
    const expired = yield* counters({
      queue: ["sluice_http_server_expired", { stage: "queue" }],
      arrival: ["sluice_http_server_expired", { stage: "arrival" }],
      unmeetable: ["sluice_http_server_expired", { stage: "unmeetable" }]
    })
    const clientA = yield* SluiceHttpClient.SluiceHttpClient
    const exits = yield* Effect.forEach(
      Array.from({ length: CALLS }),
      () =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.exit(
            clientA.execute(
              HttpClientRequest.get(`${bBase}/work`).pipe(
                HttpClientRequest.setHeader(A_DEADLINE, String(now + TIMEOUT_MS))
              )
            )
          )
        ),
      { concurrency: "unbounded" }
    )
    // What C still has queued or running: let it drain (bounded by a guard), then judge.
    for (let waited = 0; waited < 15_000 && (c.limiter.queued > 0 || at.running > 0); waited += 50)
      yield* Effect.sleep(50)
    yield* Effect.sleep(200)
    const failures = exits.map(failureOf).filter((e) => e !== undefined)
    const figures = {
      ...at,
      calls: CALLS,
      succeeded: exits.length - failures.length,
      timedOut: failures.filter(isTimeout).length,
      failures: failures.map(describeError),
      expired: yield* expired.delta,
      queuedAtEnd: c.limiter.queued,
      inFlightAtEnd: c.limiter.inFlight
    }
    yield* report(`deadline hops (${deadlineOption === false ? "header ignored" : "deadlines on"})`, figures)
    return figures
  })

// A's own limiter and throttle would only add their waits: A is the caller, not the subject.
const clientA = clientLayer({ name: "deadline-hops-a", timeout: `${TIMEOUT_MS} millis`, maxAttempts: 1 })

describe("system: a deadline across the hops A → B → C", () => {
  it.live("no handler on C starts after A's deadline, and B's retries never outlive it", () =>
    Effect.gen(function* () {
      const figures = yield* run({ margin: "250 millis" })
      const summary = JSON.stringify(figures)
      expect(figures.startsAfterDeadline, summary).toBe(0)
      expect(figures.arrivalsAfterDeadline, summary).toBe(0)
      // C could serve a few before A gave up; the rest failed, each once (A does not retry):
      // by A's deadline, or C's queue refusing a waiter at B's.
      expect(figures.succeeded, summary).toBeLessThan(CALLS / 2)
      expect(figures.timedOut, summary).toBeGreaterThan(0)
      // C's queue let its waiters go at their deadline or once it could not be met, and
      // nothing is left behind.
      expect(figures.expired.queue + figures.expired.unmeetable, summary).toBeGreaterThan(0)
      expect(figures.queuedAtEnd, summary).toBe(0)
      expect(figures.inFlightAtEnd, summary).toBe(0)
    }).pipe(Effect.provide(clientA))
  )

  it.live("the control: with the header ignored, C runs handlers for callers that gave up", () =>
    Effect.gen(function* () {
      const figures = yield* run(false)
      const summary = JSON.stringify(figures)
      expect(figures.startsAfterDeadline, summary).toBeGreaterThan(0)
      expect(figures.expired.queue + figures.expired.arrival + figures.expired.unmeetable, summary).toBe(0)
    }).pipe(Effect.provide(clientA))
  )
})

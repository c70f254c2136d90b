/**
 * System tests: Effect's own circuit breaker (`effect/persistence`'s
 * `CircuitBreaker`, through `HttpClient.withCircuitBreaker`) in front of a
 * `SluiceHttpClient` learns through Sluice's outcomes
 * (`Outcome.circuitBreakerClassifier`): the client's own limiter refusals and
 * callers that give up never open it, a backend's 503s do. With Effect's defaults
 * the same traffic opens it on the local refusals (`breaker.execute` without
 * `classify`), or never on the 503s (`HttpClient.circuitBreakerClassifier`).
 *
 * Real `NodeHttpServer` on 127.0.0.1 + `SluiceHttpClient` over undici. Invariants
 * are counts and circuit states, never timings.
 */
import { describe, expect, it } from "@effect/vitest"
import { LimitAlgorithm } from "@sluice/adaptive"
import { Outcome } from "@sluice/core"
import { SluiceHttpClient } from "@sluice/http"
import { Effect, Exit, Layer } from "effect"
import { HttpClient, HttpRouter, HttpServerResponse } from "effect/http"
import { CircuitBreaker } from "effect/persistence"
import {
  Arrivals,
  chainOf,
  clientLayer,
  describeError,
  failureOf,
  hasTag,
  report,
  routes,
  serve
} from "./harness.js"

const KEY = "backend"

/** How the test puts Effect's breaker in front of the Sluice client. */
type Guard = (
  client: SluiceHttpClient.Client,
  breaker: CircuitBreaker.CircuitBreaker
) => HttpClient.HttpClient.With<SluiceHttpClient.ClientError | CircuitBreaker.CircuitBreakerError>

/** Sluice's classification, as the `classify` of `withCircuitBreaker`. */
const sluiceClassify: Guard = (client, breaker) =>
  HttpClient.withCircuitBreaker(client, { breaker, key: KEY, classify: Outcome.circuitBreakerClassifier })

/** Effect's breaker with its own default `classify` (every failure but an interruption counts). */
const effectDefault: Guard = (client, breaker) =>
  HttpClient.transform(client, (effect) => breaker.execute(effect, { key: KEY }))

/** `withCircuitBreaker` with its default, `HttpClient.circuitBreakerClassifier`. */
const httpDefault: Guard = (client, breaker) => HttpClient.withCircuitBreaker(client, { breaker, key: KEY })

/** A refusal of the client's own limiter: an `Overloaded` with `origin: "local"`, at any depth. */
const isLocalRefusal = (error: unknown): boolean =>
  chainOf(error).some(
    (e) => (e as { _tag?: unknown })._tag === "Overloaded" && (e as { origin?: unknown }).origin === "local"
  )

const layer = (name: string) =>
  Layer.merge(
    // limit 4, queue 2: at most 6 calls in the client at once, the rest refused locally
    clientLayer({ name, maxAttempts: 1, limiter: { algorithm: () => LimitAlgorithm.fixed(4), maxQueue: 2 } }),
    CircuitBreaker.layerStoreMemory()
  )

/**
 * Three phases against one breaker (trips on 5 failures in a row) and one client:
 * 1. 60 calls at once to a slow, healthy route: at least 50 are refused by the
 *    client's own full limiter queue (the rest succeed).
 * 2. 10 waves of 5 calls to the slow route, 4 of each 5 callers giving up after
 *    30 ms (their own deadline, outside the breaker): 40 cancelled, 10 answered.
 * 3. 20 calls, one after the other, to a route that answers 503.
 * The circuit's state is read after each phase.
 */
const runPhases = (guard: Guard) =>
  Effect.gen(function* () {
    const arrivals = new Arrivals()
    const app = yield* routes(
      HttpRouter.route(
        "GET",
        "/slow",
        Effect.andThen(
          arrivals.record("slow"),
          Effect.as(Effect.sleep("400 millis"), HttpServerResponse.text("ok"))
        )
      ),
      HttpRouter.route(
        "GET",
        "/down",
        Effect.as(arrivals.record("down"), HttpServerResponse.text("unavailable", { status: 503 }))
      )
    )
    const { base } = yield* serve(app)
    const breaker = yield* CircuitBreaker.make({
      tripPolicy: CircuitBreaker.consecutive(5),
      openDuration: "1 minute"
    })
    const client = guard(yield* SluiceHttpClient.SluiceHttpClient, breaker)
    const state = Effect.map(Effect.orDie(breaker.state(KEY)), (s) => s._tag)

    // 1. local refusals
    const burst = yield* Effect.forEach(
      Array.from({ length: 60 }),
      () => Effect.exit(client.get(`${base}/slow`)),
      {
        concurrency: "unbounded"
      }
    )
    const refusals = burst.filter((exit) => isLocalRefusal(failureOf(exit))).length
    const burstRejected = burst.filter((exit) => hasTag(failureOf(exit), "CircuitBreakerError")).length
    const afterRefusals = yield* state

    // 2. callers that give up
    let cancelled = 0
    let answered = 0
    for (let wave = 0; wave < 10; wave++) {
      const exits = yield* Effect.forEach(
        Array.from({ length: 5 }, (_, i) => i),
        (i) => {
          const call = client.get(`${base}/slow`)
          return Effect.exit(i === 0 ? call : Effect.timeout(call, "30 millis"))
        },
        { concurrency: "unbounded" }
      )
      for (const exit of exits) {
        if (Exit.isSuccess(exit)) answered++
        else if (hasTag(failureOf(exit), "TimeoutError")) cancelled++
      }
    }
    const afterCancellations = yield* state

    // 3. the backend's 503s
    const overload = []
    for (let i = 0; i < 20; i++) overload.push(yield* Effect.exit(client.get(`${base}/down`)))
    const rejected = overload.filter((exit) => hasTag(failureOf(exit), "CircuitBreakerError")).length
    // the client's adaptive throttle may refuse some 503 calls before the circuit opens
    const throttled = overload.filter((exit) => hasTag(failureOf(exit), "Throttled")).length
    const afterOverload = yield* state

    const figures = {
      refusals,
      burstRejected,
      burstFailures: burst
        .map(failureOf)
        .filter((e) => e !== undefined && !isLocalRefusal(e))
        .slice(0, 3)
        .map(describeError),
      cancelled,
      answered,
      downArrivals: arrivals.route("down"),
      rejected,
      throttled,
      firstOverload: overload.slice(0, 1).map((exit) => describeError(failureOf(exit))),
      states: [afterRefusals, afterCancellations, afterOverload]
    }
    return { afterRefusals, afterCancellations, afterOverload, figures }
  })

describe("system: Effect's circuit breaker behind a Sluice client", () => {
  it.live(
    "with Outcome.circuitBreakerClassifier: closed through 50+ local refusals and 80% cancelled callers, open on remote 503s",
    () =>
      Effect.gen(function* () {
        const phases = yield* runPhases(sluiceClassify)
        const { figures } = phases
        yield* report("effect breaker, sluice classify", figures)
        const summary = JSON.stringify(figures)
        // the scenario happened as described
        expect(figures.refusals, summary).toBeGreaterThanOrEqual(50)
        expect(figures.burstRejected, summary).toBe(0)
        expect(figures.cancelled, summary).toBe(40)
        expect(figures.answered, summary).toBe(10)
        // local refusals and cancelled callers left the circuit closed
        expect(phases.afterRefusals, summary).toBe("Closed")
        expect(phases.afterCancellations, summary).toBe("Closed")
        // five 503s in a row opened it; every later call was rejected before the server
        expect(phases.afterOverload, summary).toBe("Open")
        expect(figures.downArrivals, summary).toBe(5)
        expect(figures.rejected, summary).toBeGreaterThan(0)
        expect(figures.rejected + figures.throttled, summary).toBe(15)
      }).pipe(Effect.provide(layer("system-effect-breaker-sluice")))
  )

  it.live("with Effect's default classify (breaker.execute): the local refusals open the circuit", () =>
    Effect.gen(function* () {
      const phases = yield* runPhases(effectDefault)
      const { figures } = phases
      yield* report("effect breaker, effect default classify", figures)
      const summary = JSON.stringify(figures)
      // five local refusals in a row opened it; the rest of the burst was rejected by the breaker
      expect(figures.refusals, summary).toBeGreaterThanOrEqual(5)
      expect(figures.refusals + figures.burstRejected, summary).toBeGreaterThanOrEqual(50)
      expect(phases.afterRefusals, summary).toBe("Open")
      // the healthy backend stays cut off: no later call reaches it
      expect(figures.answered, summary).toBe(0)
      expect(figures.downArrivals, summary).toBe(0)
      expect(figures.rejected, summary).toBe(20)
    }).pipe(Effect.provide(layer("system-effect-breaker-default")))
  )

  it.live(
    "with HttpClient.circuitBreakerClassifier (withCircuitBreaker's default): the 503s, as Sluice's typed errors, never open it",
    () =>
      Effect.gen(function* () {
        const phases = yield* runPhases(httpDefault)
        const { figures } = phases
        yield* report("effect breaker, http default classify", figures)
        const summary = JSON.stringify(figures)
        expect(figures.refusals, summary).toBeGreaterThanOrEqual(50)
        expect(phases.afterRefusals, summary).toBe("Closed")
        // every 503 reached the server and none counted
        expect(phases.afterOverload, summary).toBe("Closed")
        expect(figures.rejected, summary).toBe(0)
        expect(figures.downArrivals + figures.throttled, summary).toBe(20)
        expect(figures.downArrivals, summary).toBeGreaterThan(5)
      }).pipe(Effect.provide(layer("system-effect-breaker-http-default")))
  )
})

/**
 * System tests: what stacking Effect's own `HttpClient.retryTransient` under a
 * `SluiceHttpClient` does to the number of requests a failing backend receives.
 *
 * Real `NodeHttpServer` on 127.0.0.1 that always answers `503`, clients over undici.
 * The server counts every arrival and its `x-sluice-attempt` header; the invariants
 * are exact counts (zero backoff, a budget that is never the limit, sequential calls).
 *
 * - Sluice's retry alone (`maxAttempts: 3`): 3 requests per call.
 * - `retryTransient({ times: 2 })` alone: 3 requests per call (the first try and 2
 *   repeats of the `503` response, which it returns as a response).
 * - Both, Sluice above `retryTransient`: every one of Sluice's 3 attempts is 3
 *   requests underneath, 3 × 3 = 9, while Sluice's attempt header (and its budget)
 *   count only 3 attempts: the inner repeats resend the same request, header included.
 * - `retryTransient({ times: 2 })` bounds the repeats of responses and the retries of
 *   errors separately: two 503s then a transport error, over and over, is 3 × 3 = 9
 *   requests (a stub client: a loopback server cannot fail a transport on demand).
 * - `retryTransient({ times: 2 })` on a `SluiceHttpClient`: Sluice's `DontRetry` after
 *   a 503 is not transient (3 requests), but a 500, which Sluice returns as a response,
 *   is repeated as whole Sluice calls (3 requests, each a first attempt).
 * - Effect's `HttpClient.withCircuitBreaker` on a `SluiceHttpClient`: its default
 *   classifier counts Sluice's `DontRetry` as `Ignored`, so the circuit never opens;
 *   a `classify` that reads Sluice's `Outcome` counts it and opens.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import { SluiceHttpClient } from "@sluice/http"
import { RetryBudget } from "@sluice/retry"
import { Outcome } from "@sluice/core"
import { Effect, Layer, Schedule } from "effect"
import {
  HttpClient,
  HttpClientError,
  HttpClientRequest,
  HttpClientResponse,
  HttpRouter,
  HttpServerResponse
} from "effect/http"
import { CircuitBreaker } from "effect/persistence"
import { Arrivals, describeError, failureOf, hasTag, report, routes, serve } from "./harness.js"

/**
 * Serves, for the test's scope, an app whose `/busy` always answers 503 (arrivals counted, and
 * counted by attempt header in `attempts`) and whose `/error` always answers 500.
 */
const serveUnavailable = Effect.gen(function* () {
  const arrivals = new Arrivals()
  const attempts = new Map<number, number>()
  const app = yield* routes(
    HttpRouter.route(
      "GET",
      "/busy",
      Effect.map(arrivals.record("busy"), (attempt) => {
        attempts.set(attempt, (attempts.get(attempt) ?? 0) + 1)
        return HttpServerResponse.text("busy", { status: 503 })
      })
    ),
    HttpRouter.route(
      "GET",
      "/error",
      Effect.as(arrivals.record("error"), HttpServerResponse.text("bug", { status: 500 }))
    )
  )
  const { base: url } = yield* serve(app)
  return { arrivals, attempts, url }
})

/** An error as the report shows it (`undefined`: none). */
const shown = (error: unknown) => (error === undefined ? undefined : describeError(error))

/** One call of the `SluiceHttpClient` in context to `/busy`: its error and the figures reported under `label`. */
const sluiceBusyCall = (label: string) =>
  Effect.gen(function* () {
    const { arrivals, attempts, url } = yield* serveUnavailable
    const client = yield* SluiceHttpClient.SluiceHttpClient
    const error = failureOf(yield* Effect.exit(client.get(`${url}/busy`)))
    const figures = {
      arrivals: arrivals.route("busy"),
      byAttempt: Object.fromEntries(attempts),
      error: shown(error)
    }
    yield* report(label, figures)
    return { arrivals, attempts, error, figures }
  })

// Zero backoff and a budget large enough never to be the limit: the counts are the retry policies' alone.
const sluiceOptions = {
  maxAttempts: 3,
  schedule: Schedule.forever,
  timeout: "20 seconds"
} as const

/** Undici with Effect's own `retryTransient({ times: 2 })` on every request (zero delay: its default schedule). */
const undiciWithRetryTransient = Layer.effect(
  HttpClient.HttpClient,
  Effect.map(HttpClient.HttpClient, HttpClient.retryTransient({ times: 2 }))
).pipe(Layer.provide(NodeHttpClient.layerUndici))

/** A `SluiceHttpClient` as the README builds it, over the given `HttpClient` layer. */
const sluiceOver = (name: string, http: Layer.Layer<HttpClient.HttpClient>) =>
  SluiceHttpClient.layer({ ...sluiceOptions, name }).pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        RetryBudget.layer({ minRetriesPerSecond: 100 }),
        AdaptiveThrottle.layer(),
        ConcurrencyLimiter.layer()
      )
    ),
    Layer.provide(http)
  )

describe("system: stacking Effect's retryTransient under Sluice's retry", () => {
  it.live("Sluice's retry at one layer: 3 requests for one call, then DontRetry", () =>
    Effect.gen(function* () {
      const { arrivals, attempts, error, figures } = yield* sluiceBusyCall("sluice alone")

      expect(arrivals.route("busy"), JSON.stringify(figures)).toBe(3)
      // One request per attempt number: 0 (the first try), 1, 2.
      expect(Object.fromEntries(attempts), JSON.stringify(figures)).toEqual({ 0: 1, 1: 1, 2: 1 })
      expect(hasTag(error, "DontRetry"), JSON.stringify(figures)).toBe(true)
    }).pipe(Effect.provide(sluiceOver("system-stacking-alone", NodeHttpClient.layerUndici)))
  )

  it.live(
    "Effect's retryTransient({ times: 2 }) alone: 3 requests, and the last 503 comes back as a response",
    () =>
      Effect.gen(function* () {
        const { arrivals, url } = yield* serveUnavailable
        const client = yield* HttpClient.HttpClient
        const response = yield* client.get(`${url}/busy`)
        yield* report("retryTransient alone", { arrivals: arrivals.route("busy"), status: response.status })

        expect(arrivals.route("busy")).toBe(3)
        expect(response.status).toBe(503)
      }).pipe(Effect.provide(undiciWithRetryTransient))
  )

  it.live(
    "Sluice over retryTransient({ times: 2 }): 3 × 3 = 9 requests for one call, 3 attempts as Sluice counts them",
    () =>
      Effect.gen(function* () {
        const { arrivals, attempts, error, figures } = yield* sluiceBusyCall("sluice over retryTransient")

        // Each of Sluice's 3 attempts is a first try and 2 repeats underneath.
        expect(arrivals.route("busy"), JSON.stringify(figures)).toBe(9)
        // The repeats resend the attempt's request as it is: the server sees attempt
        // numbers 0, 1, 2 three times each, and cannot tell a repeat from its original.
        expect(Object.fromEntries(attempts), JSON.stringify(figures)).toEqual({ 0: 3, 1: 3, 2: 3 })
        expect(hasTag(error, "DontRetry"), JSON.stringify(figures)).toBe(true)
      }).pipe(Effect.provide(sluiceOver("system-stacking-stacked", undiciWithRetryTransient)))
  )

  it.live(
    "Effect's withCircuitBreaker on a SluiceHttpClient: DontRetry is Ignored by default, counted with Sluice's Outcome",
    () =>
      Effect.gen(function* () {
        const { arrivals, url } = yield* serveUnavailable
        const client = yield* SluiceHttpClient.SluiceHttpClient
        const breakerOf = CircuitBreaker.make({
          tripPolicy: CircuitBreaker.consecutive(1),
          openDuration: "1 minute"
        })

        // The default classifier: a DontRetry is an unknown typed error, Ignored. Three calls, nine requests, still Closed.
        const plainBreaker = yield* breakerOf
        const plain = client.pipe(HttpClient.withCircuitBreaker({ breaker: plainBreaker, key: "plain" }))
        const plainErrors: Array<string> = []
        for (let i = 0; i < 3; i++) {
          const error = failureOf(yield* Effect.exit(plain.get(`${url}/busy`)))
          plainErrors.push(error === undefined ? "none" : describeError(error))
        }
        const plainArrivals = arrivals.route("busy")
        const plainState = (yield* plainBreaker.state("plain"))._tag

        // Classified by Sluice's outcome: a `dropped` or `failed` call is a Failure. The first call opens the circuit,
        // the second is rejected before Sluice's retry loop starts.
        const sluiceBreaker = yield* breakerOf
        const classified = client.pipe(
          HttpClient.withCircuitBreaker({
            breaker: sluiceBreaker,
            key: "classified",
            classify: Outcome.circuitBreakerClassifier
          })
        )
        const first = failureOf(yield* Effect.exit(classified.get(`${url}/busy`)))
        const second = failureOf(yield* Effect.exit(classified.get(`${url}/busy`)))
        const classifiedArrivals = arrivals.route("busy") - plainArrivals
        const classifiedState = (yield* sluiceBreaker.state("classified"))._tag

        const figures = {
          plainArrivals,
          plainState,
          plainErrors,
          classifiedArrivals,
          classifiedState,
          first: shown(first),
          second: shown(second)
        }
        yield* report("withCircuitBreaker over sluice", figures)
        const summary = JSON.stringify(figures)

        expect(plainArrivals, summary).toBe(9)
        expect(plainState, summary).toBe("Closed")
        expect(
          plainErrors.every((e) => e.startsWith("DontRetry")),
          summary
        ).toBe(true)
        expect(hasTag(first, "DontRetry"), summary).toBe(true)
        expect(hasTag(second, "CircuitBreakerError"), summary).toBe(true)
        expect(classifiedArrivals, summary).toBe(3)
        expect(classifiedState, summary).toBe("Open")
      }).pipe(
        Effect.provide(
          Layer.merge(
            sluiceOver("system-stacking-breaker", NodeHttpClient.layerUndici),
            CircuitBreaker.layerStoreMemory()
          )
        )
      )
  )

  it.effect("retryTransient({ times: 2 }) alone, responses and errors mixed: (2 + 1)² = 9 requests", () =>
    Effect.gen(function* () {
      let requests = 0
      // Two 503 responses, then a transport error, over and over.
      const flaky = HttpClient.make((request) =>
        Effect.suspend(() => {
          requests++
          return requests % 3 === 0
            ? Effect.fail(
                new HttpClientError.HttpClientError({
                  reason: new HttpClientError.TransportError({ request })
                })
              )
            : Effect.succeed(HttpClientResponse.fromWeb(request, new Response(null, { status: 503 })))
        })
      )
      const error = failureOf(
        yield* Effect.exit(
          flaky
            .pipe(HttpClient.retryTransient({ times: 2 }))
            .execute(HttpClientRequest.get("http://flaky.test/"))
        )
      )
      yield* report("retryTransient mixed", {
        requests,
        error: shown(error)
      })

      // The repeat of 503s (2 repeats) runs inside the retry of errors (2 retries): 3 rounds of 3.
      expect(requests).toBe(9)
      expect(hasTag(error, "HttpClientError")).toBe(true)
    })
  )

  it.live(
    "retryTransient({ times: 2 }) on a SluiceHttpClient: DontRetry is not repeated, a returned 500 is",
    () =>
      Effect.gen(function* () {
        const { arrivals, url } = yield* serveUnavailable
        const client = (yield* SluiceHttpClient.SluiceHttpClient).pipe(
          HttpClient.retryTransient({ times: 2 })
        )
        const busy = failureOf(yield* Effect.exit(client.get(`${url}/busy`)))
        const error = yield* client.get(`${url}/error`)
        const figures = {
          busy: arrivals.route("busy"),
          busyError: shown(busy),
          error: arrivals.route("error"),
          errorRetries: arrivals.retriesOf("error"),
          errorStatus: error.status
        }
        yield* report("retryTransient over sluice", figures)
        const summary = JSON.stringify(figures)

        // Sluice's 3 attempts, then DontRetry, which retryTransient does not retry.
        expect(arrivals.route("busy"), summary).toBe(3)
        expect(hasTag(busy, "DontRetry"), summary).toBe(true)
        // A 500 is Sluice's answer, not a failure: retryTransient repeats it twice, each a fresh Sluice call (attempt 0).
        expect(arrivals.route("error"), summary).toBe(3)
        expect(arrivals.retriesOf("error"), summary).toBe(0)
        expect(error.status, summary).toBe(500)
      }).pipe(Effect.provide(sluiceOver("system-stacking-above", NodeHttpClient.layerUndici)))
  )
})

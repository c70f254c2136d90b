// The systems under test of the admission property tests: the server's gates (LoadShedder,
// ConcurrencyLimiter, both in Middleware.loadShed) and the client's limiter (SluiceHttpClient's).
import { AdaptiveThrottle, ConcurrencyLimiter, LimitAlgorithm, LoadShedder } from "@sluice/adaptive"
import { Middleware, SluiceHttpClient } from "@sluice/http"
import { RetryBudget } from "@sluice/retry"
import { Effect, Layer } from "effect"
import type { Scope } from "effect"
import { HttpClient, HttpClientResponse, HttpServerRequest, HttpServerResponse } from "effect/http"

/** A system under test: how one request runs its work, and what the gates hold. */
export interface Sut {
  readonly request: (work: Effect.Effect<void>) => Effect.Effect<unknown, unknown>
  readonly inFlight: () => number
  readonly queued: () => number
  /** Whether work waits for capacity (a limiter) rather than being admitted or refused at once. */
  readonly waits: boolean
}

export interface Setup {
  readonly capacity: number
  readonly maxQueue: number
  /** Guaranteed shares of the limit (the limiter's partitions). */
  readonly partitions?: boolean | undefined
}

const limiterOptions = (setup: Setup) => ({
  algorithm: () => LimitAlgorithm.fixed(setup.capacity),
  maxQueue: setup.maxQueue,
  maxWait: "1 second" as const,
  ...(setup.partitions === true ? { partitions: { CRITICAL_PLUS: 0.5, SHEDDABLE: 0.25 } } : {})
})

const request = HttpServerRequest.fromWeb(new Request("http://localhost/"))

export const suts: Record<string, (setup: Setup) => Effect.Effect<Sut, unknown, Scope.Scope>> = {
  ConcurrencyLimiter: (setup) =>
    Effect.map(ConcurrencyLimiter.make(limiterOptions(setup)), (limiter) => ({
      request: limiter.withLimiter,
      inFlight: () => limiter.inFlight,
      queued: () => limiter.queued,
      waits: true
    })),
  LoadShedder: (setup) =>
    Effect.map(LoadShedder.make({ capacity: setup.capacity }), (shedder) => ({
      request: shedder.withShedder,
      inFlight: () => shedder.activeUnsafe(),
      queued: () => 0,
      waits: false
    })),
  "Middleware.loadShed": (setup) =>
    Effect.gen(function* () {
      const shedder = yield* LoadShedder.make({ capacity: setup.capacity })
      const limiter = yield* ConcurrencyLimiter.make(limiterOptions(setup))
      const shed = Middleware.loadShed({ shedder, limiter })
      return {
        request: (work: Effect.Effect<void>) =>
          shed(Effect.as(work, HttpServerResponse.empty())).pipe(
            Effect.provideService(HttpServerRequest.HttpServerRequest, request)
          ),
        inFlight: () => limiter.inFlight + shedder.activeUnsafe(),
        queued: () => limiter.queued,
        waits: true
      }
    }),
  SluiceHttpClient: (setup) => client(setup, undefined),
  // With a `timeout` the call runs in the timeout's own fiber, which an interruption pending
  // on an uninterruptible caller does not reach: only the leak is checked there.
  "SluiceHttpClient with timeout": (setup) => client(setup, "1 minute")
}

const client = (setup: Setup, timeout: "1 minute" | undefined): Effect.Effect<Sut, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    // A backend in memory: each request runs the work registered under its path.
    const works = new Map<string, Effect.Effect<void>>()
    let next = 0
    const backend = HttpClient.make((req) =>
      Effect.as(
        works.get(new URL(req.url).pathname) ?? Effect.void,
        HttpClientResponse.fromWeb(req, new Response("ok"))
      )
    )
    const limiters = yield* ConcurrencyLimiter.makeService(limiterOptions(setup))
    // One limiter per host (not per criticality), so that one bound holds for every level here.
    const client = yield* SluiceHttpClient.make(
      timeout === undefined ? { limitPerCriticality: false } : { timeout, limitPerCriticality: false }
    ).pipe(
      Effect.provide(
        Layer.mergeAll(
          Layer.succeed(HttpClient.HttpClient, backend),
          Layer.succeed(ConcurrencyLimiter.ConcurrencyLimiter, limiters),
          AdaptiveThrottle.layer(),
          RetryBudget.layer()
        )
      )
    )
    const limiter = () => limiters.getUnsafe("backend.test")
    return {
      request: (work: Effect.Effect<void>) =>
        Effect.suspend(() => {
          const path = `/${next++}`
          works.set(path, work)
          return client.get(`http://backend.test${path}`)
        }),
      inFlight: () => limiter().inFlight,
      queued: () => limiter().queued,
      waits: timeout === undefined
    }
  })

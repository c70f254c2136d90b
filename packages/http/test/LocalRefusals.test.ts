// What the client refuses itself returns at once. A periodic caller must not turn that into
// calls faster than its normal rate, and a caller that gives up is neither a success nor a
// drop to the policies. TestClock and an in-memory backend.
import { describe, expect, it } from "@effect/vitest"
import { AdaptiveThrottle, AimdInterval, ConcurrencyLimiter, LimitAlgorithm } from "@sluice/adaptive"
import { SluiceHttpClient } from "@sluice/http"
import { RetryBudget } from "@sluice/retry"
import { Clock, Deferred, Duration, Effect, Fiber, Layer } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { TestClock } from "effect/testing"

const HOST = "backend.test"
const URL = `http://${HOST}/poll`

/** A backend that answers after `release` (never, unless released), counting arrivals. */
const makeBackend = () => {
  const release = Deferred.makeUnsafe<void>()
  const seen = { arrivals: 0 }
  const client = HttpClient.make((request) =>
    Effect.sync(() => seen.arrivals++).pipe(
      Effect.andThen(Deferred.await(release)),
      Effect.as(HttpClientResponse.fromWeb(request, new Response("ok")))
    )
  )
  return { release, seen, layer: Layer.succeed(HttpClient.HttpClient, client) }
}

interface Polled {
  readonly throttle: boolean
}

describe("SluiceHttpClient: local refusals", () => {
  it.effect(
    "a poller written as the README shows, every call refused locally, polls no faster than its rate",
    () =>
      Effect.gen(function* () {
        const backend = makeBackend()
        // One permit, no queue: while one call holds it, every other call is refused here.
        const client = yield* SluiceHttpClient.makeDefault({
          limiter: { algorithm: () => LimitAlgorithm.fixed(1), maxQueue: 0 }
        }).pipe(Effect.provide(backend.layer))
        const holder = yield* Effect.forkChild(client.get(URL))
        yield* Effect.yieldNow

        const polls: Array<number> = []
        // The poll: a response's throttle flag, and a refusal (this client's own, or the
        // server's) read as "slow down".
        const poll: Effect.Effect<Polled> = Effect.gen(function* () {
          polls.push(yield* Clock.currentTimeMillis)
          return yield* client.get(URL).pipe(
            Effect.map((response): Polled => ({ throttle: response.headers["x-sluice-throttle"] === "1" })),
            Effect.catch(() => Effect.succeed<Polled>({ throttle: true }))
          )
        })
        const aimd = yield* AimdInterval.make({ min: "1 second", max: "16 seconds", rateStep: 0.01 })
        const poller = yield* Effect.forkChild(
          Effect.repeat(
            poll,
            aimd.scheduleFrom((p: Polled) => p.throttle)
          )
        )
        yield* TestClock.adjust(Duration.seconds(60))
        yield* Fiber.interrupt(poller)

        // Every poll was refused locally: only the holder reached the backend.
        expect(backend.seen.arrivals).toBe(1)
        // No two polls closer than the poller's shortest interval, and fewer polls than its
        // normal (shortest-interval) rate would make: each refusal doubled the interval.
        const gaps = polls.slice(1).map((t, i) => t - polls[i]!)
        expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1000)
        expect(polls.length).toBeLessThanOrEqual(60 / 1 + 1)
        expect(polls.length).toBeLessThanOrEqual(8)
        yield* Fiber.interrupt(holder)
      })
  )

  it.effect(
    "calls their callers cancel are neither successes nor drops: no limit falls, the throttle counts nothing",
    () => {
      const backend = makeBackend()
      return Effect.gen(function* () {
        const client = yield* SluiceHttpClient.SluiceHttpClient
        const throttle = yield* AdaptiveThrottle.AdaptiveThrottle
        const limiters = yield* ConcurrencyLimiter.ConcurrencyLimiter
        const budget = yield* RetryBudget.forKey("cancelled")
        const key = `${HOST}/CRITICAL`
        for (let round = 0; round < 5; round++) {
          const fibers = yield* Effect.forEach(Array.from({ length: 30 }), () =>
            Effect.forkChild(client.get(URL))
          )
          yield* TestClock.adjust(Duration.millis(500))
          yield* Effect.forEach(fibers, Fiber.interrupt)
        }
        // 150 calls sent and then cancelled by their callers.
        expect(backend.seen.arrivals).toBe(150)
        expect(throttle.statsUnsafe(key)).toEqual({ requests: 0, accepts: 0, inFlight: 0 })
        expect(limiters.keys()).toEqual([key])
        expect(limiters.getUnsafe(key).limit).toBe(20)
        expect(limiters.getUnsafe(key).inFlight).toBe(0)
        expect((yield* budget.stats).retries).toBe(0)
      }).pipe(
        Effect.provide(
          SluiceHttpClient.layer({ name: "cancelled" }).pipe(
            Layer.provideMerge(
              Layer.mergeAll(RetryBudget.layer(), AdaptiveThrottle.layer(), ConcurrencyLimiter.layer())
            ),
            Layer.provide(backend.layer)
          )
        )
      )
    }
  )
})

// The client's own waits and its own deadline are never taken for backend overload,
// and a retry that cannot start before the call's deadline spends nothing. TestClock
// and an in-memory backend: every time below is exact.
import { describe, expect, it } from "@effect/vitest"
import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import { Errors } from "@sluice/core"
import { SluiceHttpClient } from "@sluice/http"
import { Retry, RetryBudget } from "@sluice/retry"
import { Cause, Effect, Exit, Fiber, Layer, Option, Schedule } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { TestClock } from "effect/testing"

const KEY = "backend.test"
const URL = `http://${KEY}/items`
/** The throttle's and the limiter's key for the client's (CRITICAL) calls. */
const STATE = `${KEY}/CRITICAL`

/** A backend that answers every request after `millis` (or never), counting first tries and retries. */
const makeBackend = (millis: number | "never") => {
  const seen = { requests: 0, retries: 0 }
  const client = HttpClient.make((request) => {
    seen.requests++
    if (request.headers["x-sluice-attempt"] !== "0") seen.retries++
    return millis === "never"
      ? Effect.never
      : Effect.as(Effect.sleep(millis), HttpClientResponse.fromWeb(request, new Response("ok")))
  })
  return { seen, layer: Layer.succeed(HttpClient.HttpClient, client) }
}

/** The client over the backend, its policies the app's own (so the test reads their state). */
const clientLayer = (
  backend: Layer.Layer<HttpClient.HttpClient>,
  options: SluiceHttpClient.ClientOptions,
  budget: RetryBudget.RetryBudgetOptions = {}
) =>
  SluiceHttpClient.layer(options).pipe(
    Layer.provideMerge(
      Layer.mergeAll(RetryBudget.layer(budget), AdaptiveThrottle.layer(), ConcurrencyLimiter.layer())
    ),
    Layer.provide(backend)
  )

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.findErrorOption(exit.cause)) : undefined

/** `n` concurrent calls, forked; the clock then runs `millis` ahead; every exit. */
const calls = (client: SluiceHttpClient.Client, n: number, millis: number) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.forkChild(
      Effect.forEach(Array.from({ length: n }), () => Effect.exit(client.get(URL)), {
        concurrency: "unbounded"
      })
    )
    yield* TestClock.adjust(millis)
    return yield* Fiber.join(fiber)
  })

const isDontRetry = (error: unknown, reason: Errors.DontRetryReason): boolean =>
  error instanceof Errors.DontRetry && error.reason === reason

describe("SluiceHttpClient: local waits and the call's own deadline", () => {
  // A 100 ms backend, a limit of 20 (the congestion window's start) and 120 calls due in
  // 250 ms: 20 are served at 100 ms, about 40 at 200 ms, and the rest are sent at 200 ms
  // with 50 ms left of their deadline. Those exchanges are cut short by the time their
  // callers spent queued here, not by the backend.
  it.effect("an exchange cut short by the time a call waited locally is ignored, not dropped", () => {
    const backend = makeBackend(100)
    return Effect.gen(function* () {
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const throttle = yield* AdaptiveThrottle.AdaptiveThrottle
      const limiters = yield* ConcurrencyLimiter.ConcurrencyLimiter
      const budget = yield* RetryBudget.forKey("local-waits")

      const exits = yield* calls(client, 120, 1_000)
      const limiter = limiters.getUnsafe(STATE)
      const stats = throttle.statsUnsafe(STATE)
      const failures = exits.map(failureOf).filter((e) => e !== undefined)
      const succeeded = exits.filter(Exit.isSuccess).length

      const summary = JSON.stringify({
        succeeded,
        failures: [...new Set(failures.map((e) => `${e._tag}(${"reason" in e ? e.reason : ""})`))],
        limit: limiter.limit,
        stats,
        seen: backend.seen
      })
      // Some calls were cut off by their deadline after waiting here...
      expect(succeeded, summary).toBeGreaterThanOrEqual(40)
      expect(succeeded, summary).toBeLessThan(120)
      expect(backend.seen.requests, summary).toBe(120)
      // ...each ends DontRetry("timeout") and none says the backend refused...
      expect(failures.length, summary).toBe(120 - succeeded)
      expect(
        failures.every((e) => isDontRetry(e, "timeout")),
        summary
      ).toBe(true)
      // ...and no policy learnt a drop from them: the window only grew, the throttle
      // counted no rejection, nothing was retried and the budget is untouched.
      expect(limiter.limit, summary).toBeGreaterThan(20)
      expect(stats, summary).toEqual({ requests: succeeded, accepts: succeeded, inFlight: 0 })
      expect(backend.seen.retries, summary).toBe(0)
      expect((yield* budget.stats).retries, summary).toBe(0)
      expect(limiter.inFlight, summary).toBe(0)
    }).pipe(Effect.provide(clientLayer(backend.layer, { name: "local-waits", timeout: "250 millis" })))
  })

  it.effect("an exchange that runs its whole attemptTimeout from the send is a drop", () => {
    const backend = makeBackend("never")
    return Effect.gen(function* () {
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const throttle = yield* AdaptiveThrottle.AdaptiveThrottle
      const [exit] = yield* calls(client, 1, 1_000)
      const error = failureOf(exit!)
      // The one attempt hung for the whole timeout (the default attemptTimeout): the
      // backend was too slow, the throttle counts it as a rejection.
      expect(isDontRetry(error, "timeout")).toBe(true)
      expect(throttle.statsUnsafe(STATE)).toEqual({ requests: 1, accepts: 0, inFlight: 0 })
    }).pipe(Effect.provide(clientLayer(backend.layer, { name: "slow-backend", timeout: "250 millis" })))
  })

  it.effect("an exchange cut off by an enclosing caller's earlier deadline is ignored", () => {
    const backend = makeBackend("never")
    return Effect.gen(function* () {
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const throttle = yield* AdaptiveThrottle.AdaptiveThrottle
      const limiters = yield* ConcurrencyLimiter.ConcurrencyLimiter
      const budget = yield* RetryBudget.forKey("enclosing")
      // The caller has 100 ms left of its own deadline; the client's timeout would give 250.
      const fiber = yield* Effect.forkChild(
        Effect.exit(client.get(URL).pipe(Effect.provideService(Retry.currentDeadline, 100)))
      )
      yield* TestClock.adjust(1_000)
      const error = failureOf(yield* Fiber.join(fiber))
      expect(isDontRetry(error, "timeout")).toBe(true)
      expect(backend.seen).toEqual({ requests: 1, retries: 0 })
      // The exchange had 100 ms, not its 250 ms bound: nothing learnt, nothing spent.
      expect(throttle.statsUnsafe(STATE)).toEqual({ requests: 0, accepts: 0, inFlight: 0 })
      expect(limiters.getUnsafe(STATE).limit).toBe(20)
      expect((yield* budget.stats).retries).toBe(0)
    }).pipe(Effect.provide(clientLayer(backend.layer, { name: "enclosing", timeout: "250 millis" })))
  })

  it.effect("calls cut off by their own timeout schedule no retry and spend no budget", () => {
    const backend = makeBackend("never")
    return Effect.gen(function* () {
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const budget = yield* RetryBudget.forKey("own-deadline")
      const exits = yield* calls(client, 10, 1_000)
      const errors = exits.map(failureOf)
      expect(errors.every((e) => isDontRetry(e, "timeout"))).toBe(true)
      expect((yield* budget.stats).retries).toBe(0)
      expect(backend.seen).toEqual({ requests: 10, retries: 0 })
    }).pipe(
      Effect.provide(
        clientLayer(
          backend.layer,
          { name: "own-deadline", timeout: "250 millis" },
          // Every retry the policy asks for is granted: only the deadline may stop it.
          { minRetriesPerSecond: 1000 }
        )
      )
    )
  })

  it.effect("a retry that can start before the deadline runs; the one after it is not scheduled", () => {
    const backend = makeBackend("never")
    return Effect.gen(function* () {
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const budget = yield* RetryBudget.forKey("attempts")
      const [exit] = yield* calls(client, 1, 1_000)
      const error = failureOf(exit!)
      // 0–100 ms the first attempt, 150–250 ms the retry (it fits before the 250 ms
      // deadline, so it spends a token), and a second retry would start at 300 ms.
      expect(isDontRetry(error, "timeout")).toBe(true)
      expect(error instanceof Errors.DontRetry && error.attempts).toBe(2)
      expect(backend.seen).toEqual({ requests: 2, retries: 1 })
      expect((yield* budget.stats).retries).toBe(1)
    }).pipe(
      Effect.provide(
        clientLayer(
          backend.layer,
          {
            name: "attempts",
            timeout: "250 millis",
            attemptTimeout: "100 millis",
            maxAttempts: 5,
            schedule: Schedule.spaced("50 millis")
          },
          { minRetriesPerSecond: 1000 }
        )
      )
    )
  })
})

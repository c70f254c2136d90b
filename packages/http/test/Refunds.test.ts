// A retry is paid for when it is scheduled and given back when it never leaves: the
// client's own limiter refused it, or its caller abandoned it before it was sent. The
// budget bounds the load retries add to a backend, so what it holds must be the retries
// the backend saw. TestClock and an in-memory backend: every time below is exact.
import { describe, expect, it } from "@effect/vitest"
import { AdaptiveThrottle, ConcurrencyLimiter, LimitAlgorithm } from "@sluice/adaptive"
import { Errors } from "@sluice/core"
import { SluiceHttpClient } from "@sluice/http"
import { RetryBudget } from "@sluice/retry"
import { Cause, Effect, Exit, Fiber, Layer, Option, Schedule } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { TestClock } from "effect/testing"

const KEY = "backend.test"

/** `/slow` answers 200 after 10 s; anything else 503 after 10 ms. Counts first tries and retries. */
const makeBackend = () => {
  const seen = { requests: 0, retries: 0 }
  const client = HttpClient.make((request) => {
    seen.requests++
    if (request.headers["x-sluice-attempt"] !== "0") seen.retries++
    const slow = request.url.endsWith("/slow")
    return Effect.as(
      Effect.sleep(slow ? 10_000 : 10),
      HttpClientResponse.fromWeb(request, new Response(slow ? "ok" : "busy", { status: slow ? 200 : 503 }))
    )
  })
  return { seen, layer: Layer.succeed(HttpClient.HttpClient, client) }
}

/** One permit per host and no queue: a retry that finds the permit taken is refused here. */
const clientLayer = (backend: Layer.Layer<HttpClient.HttpClient>, budget: RetryBudget.RetryBudgetOptions) =>
  SluiceHttpClient.layer({ name: "refunds", maxAttempts: 3, schedule: Schedule.spaced("50 millis") }).pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        RetryBudget.layer(budget),
        AdaptiveThrottle.layer(),
        ConcurrencyLimiter.layer({ algorithm: () => LimitAlgorithm.fixed(1), maxQueue: 0 })
      )
    ),
    Layer.provide(backend)
  )

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.findErrorOption(exit.cause)) : undefined

const reasonOf = (error: unknown): string =>
  error instanceof Errors.DontRetry ? error.reason : error === undefined ? "success" : String(error)

describe("SluiceHttpClient: retries that never leave spend no budget", () => {
  it.effect("a retry refused by the client's own limiter leaves the budget as it was", () => {
    const backend = makeBackend()
    return Effect.gen(function* () {
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const budget = yield* RetryBudget.forKey("refunds")
      // The first try holds the only permit until its 503 at 10 ms; the retry is paid for then
      // and due at 60 ms, but a call to /slow took the permit at 20 ms.
      const failing = yield* Effect.forkChild(Effect.exit(client.get(`http://${KEY}/fail`)))
      yield* TestClock.adjust(20)
      const slow = yield* Effect.forkChild(Effect.exit(client.get(`http://${KEY}/slow`)))
      yield* TestClock.adjust(1)
      expect(budget.statsUnsafe(21)).toMatchObject({ requests: 2, retries: 1 })
      yield* TestClock.adjust(100)
      const error = failureOf(yield* Fiber.join(failing))
      expect(error).toBeInstanceOf(Errors.DontRetry)
      expect((error as Errors.DontRetry).reason).toBe("refused")
      expect(backend.seen).toEqual({ requests: 2, retries: 0 })
      expect(budget.statsUnsafe(121)).toMatchObject({ requests: 2, retries: 0 })
      yield* TestClock.adjust(10_000)
      expect(Exit.isSuccess(yield* Fiber.join(slow))).toBe(true)
    }).pipe(Effect.provide(clientLayer(backend.layer, { ratio: 0, minRetriesPerSecond: 1 })))
  })

  it.effect("a retry its caller abandons during the backoff is given back", () => {
    const backend = makeBackend()
    return Effect.gen(function* () {
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const budget = yield* RetryBudget.forKey("refunds")
      const failing = yield* Effect.forkChild(client.get(`http://${KEY}/fail`))
      yield* TestClock.adjust(20)
      expect(budget.statsUnsafe(20)).toMatchObject({ retries: 1 })
      yield* Fiber.interrupt(failing)
      expect(budget.statsUnsafe(20)).toMatchObject({ retries: 0 })
      expect(backend.seen).toEqual({ requests: 1, retries: 0 })
    }).pipe(Effect.provide(clientLayer(backend.layer, { ratio: 0, minRetriesPerSecond: 1 })))
  })

  // The shape: a backend answering 503 while one long call holds the only permit, so
  // most retries are refused here. Paid-for retries the backend never saw used to spend the
  // floor, and later calls then ended `DontRetry(budget)` without one retry reaching it.
  it.effect("the budget holds the retries the backend saw; none is denied while the floor is unused", () => {
    const backend = makeBackend()
    return Effect.gen(function* () {
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const budget = yield* RetryBudget.forKey("refunds")
      const fibers: Array<Fiber.Fiber<Exit.Exit<unknown, unknown>>> = []
      // 40 calls, 35 ms apart (a retry 50 ms after a 503 finds the permit free); at 280 ms a call to
      // /slow takes it for 10 s.
      let slow: Fiber.Fiber<Exit.Exit<unknown, unknown>> | undefined
      for (let i = 0; i < 40; i++) {
        if (i === 8) slow = yield* Effect.forkChild(Effect.exit(client.get(`http://${KEY}/slow`)))
        fibers.push(yield* Effect.forkChild(Effect.exit(client.get(`http://${KEY}/fail`))))
        yield* TestClock.adjust(35)
      }
      const reasons: Record<string, number> = {}
      for (const fiber of fibers) {
        const reason = reasonOf(failureOf(yield* Fiber.join(fiber)))
        reasons[reason] = (reasons[reason] ?? 0) + 1
      }
      // every retry was paid within the last 1.4 s: the 10 s window holds them all
      const stats = budget.statsUnsafe(1_400)
      const summary = JSON.stringify({ reasons, seen: backend.seen, stats })
      expect(stats.retries, summary).toBe(backend.seen.retries)
      // fewer retries reached the backend than the floor of 20: no call was denied its retry
      expect(backend.seen.retries, summary).toBeLessThan(20)
      expect(reasons["budget"], summary).toBeUndefined()
      expect(reasons["refused"], summary).toBeGreaterThan(0)
      yield* TestClock.adjust(10_000)
      expect(Exit.isSuccess(yield* Fiber.join(slow!))).toBe(true)
    }).pipe(Effect.provide(clientLayer(backend.layer, { ratio: 0, minRetriesPerSecond: 2 })))
  })
})

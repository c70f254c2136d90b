import { ConcurrencyLimiter, LimitAlgorithm } from "@sluice/adaptive"
import { Middleware } from "@sluice/http"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { TestClock } from "effect/testing"

const turns = Effect.repeat(Effect.yieldNow, { times: 10 })

describe("a request interrupted as it reaches the gate", () => {
  // The caller disconnects while an outer middleware runs: Effect 4's server runs middleware
  // uninterruptibly, so the interruption is pending when the request reaches `loadShed`.
  it.effect("loadShed({ limiter }) neither keeps its queue slot nor receives a permit", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({
        algorithm: () => LimitAlgorithm.fixed(1),
        maxQueue: 4,
        maxWait: "1 second"
      })
      const release = yield* Deferred.make<void>()
      let ran = 0
      const shed = Middleware.loadShed({ limiter })
      const holder = yield* Effect.forkChild(
        shed(Effect.as(Deferred.await(release), HttpServerResponse.empty()))
      )
      yield* turns
      expect(limiter.inFlight).toBe(1)
      const late = yield* Effect.forkChild(
        Effect.uninterruptible(
          Effect.andThen(
            Effect.sleep("20 millis"),
            shed(Effect.sync(() => (ran++, HttpServerResponse.empty())))
          )
        )
      )
      yield* turns
      const interrupting = yield* Effect.forkChild(Fiber.interrupt(late))
      yield* TestClock.adjust("20 millis")
      yield* Fiber.join(interrupting)
      const lateExit = yield* Fiber.await(late)
      expect(Exit.hasInterrupts(lateExit)).toBe(true)
      expect(limiter.queued).toBe(0)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      yield* TestClock.adjust("2 seconds")
      yield* turns
      expect(ran).toBe(0)
      expect(limiter.inFlight).toBe(0)
      expect(limiter.queued).toBe(0)
      // The next request passes.
      const next = yield* shed(Effect.succeed(HttpServerResponse.text("next")))
      expect(next.status).toBe(200)
    }).pipe(
      Effect.provideService(
        HttpServerRequest.HttpServerRequest,
        HttpServerRequest.fromWeb(new Request("http://localhost/"))
      )
    )
  )
})

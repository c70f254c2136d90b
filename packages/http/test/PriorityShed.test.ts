// A server that sheds by priority refuses SHEDDABLE work while it still admits CRITICAL
// work: the client's defaults must read those sheds as a signal about SHEDDABLE only, and
// serve the waiters with the most time left first. TestClock and an in-memory backend.
import { describe, expect, it } from "@effect/vitest"
import { Criticality } from "@sluice/core"
import { SluiceHttpClient } from "@sluice/http"
import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"

const URL = "http://backend.test/items"

/**
 * Sheds every `SHEDDABLE` request (503); holds every other one until `release`, noting
 * the order in which they arrived (their `x-id` header).
 */
const makeBackend = () => {
  const release = Deferred.makeUnsafe<void>()
  const arrived: Array<string> = []
  const client = HttpClient.make((request) =>
    request.headers["x-sluice-criticality"] === "SHEDDABLE"
      ? Effect.succeed(HttpClientResponse.fromWeb(request, new Response(null, { status: 503 })))
      : Effect.sync(() => arrived.push(request.headers["x-id"] ?? "")).pipe(
          Effect.andThen(Deferred.await(release)),
          Effect.as(HttpClientResponse.fromWeb(request, new Response("ok")))
        )
  )
  return { release, arrived, layer: Layer.succeed(HttpClient.HttpClient, client) }
}

const settle = Effect.gen(function* () {
  for (let i = 0; i < 200; i++) yield* Effect.yieldNow
})

describe("SluiceHttpClient under a server that sheds by priority", () => {
  it.effect("sheds of SHEDDABLE work neither throttle nor hold back CRITICAL work", () =>
    Effect.gen(function* () {
      const backend = makeBackend()
      const client = yield* SluiceHttpClient.makeDefault({ maxAttempts: 1 }).pipe(
        Effect.provide(backend.layer)
      )
      const call = (level: Criticality.Criticality, id: number) =>
        client.get(URL, { headers: { "x-id": String(id) } }).pipe(Criticality.withCriticality(level))
      for (let i = 0; i < 100; i++) {
        const exit = yield* Effect.exit(call("SHEDDABLE", i))
        expect(Exit.isFailure(exit)).toBe(true)
      }
      // 20: the congestion window's initial value, untouched by the SHEDDABLE drops.
      const fibers = yield* Effect.forEach(
        Array.from({ length: 20 }, (_, i) => i),
        (i) => Effect.forkChild(call("CRITICAL", i))
      )
      yield* settle
      expect(backend.arrived.length).toBe(20)
      yield* Deferred.succeed(backend.release, undefined)
      const exits = yield* Effect.forEach(fibers, Fiber.await)
      expect(exits.filter(Exit.isSuccess).length).toBe(20)
    })
  )

  it.effect("waiters for a permit are served newest first", () =>
    Effect.gen(function* () {
      const backend = makeBackend()
      const client = yield* SluiceHttpClient.makeDefault({
        maxAttempts: 1,
        limiter: { maxQueue: 100 }
      }).pipe(Effect.provide(backend.layer))
      const call = (id: number) =>
        client.get(URL, { headers: { "x-id": String(id) } }).pipe(Criticality.withCriticality("CRITICAL"))
      // 20 fill the initial window, 5 wait; each one served is released at once after.
      const fibers: Array<Fiber.Fiber<unknown, unknown>> = []
      for (let i = 0; i < 25; i++) {
        fibers.push(yield* Effect.forkChild(call(i)))
        yield* settle
      }
      expect(backend.arrived.length).toBe(20)
      yield* Deferred.succeed(backend.release, undefined)
      yield* Effect.forEach(fibers, Fiber.await)
      expect(backend.arrived.slice(20)).toEqual(["24", "23", "22", "21", "20"])
    })
  )
})

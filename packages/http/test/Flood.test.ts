// The one-layer default under a flood, over real sockets: `Middleware.loadShed()` with
// `LoadShedder.layer({ capacity: 8 })` and nothing else. Invariants only (counts and order
// of admissions), never timings: the handler holds every request until the test lets it go.
import { describe, expect, it } from "@effect/vitest"
import { LoadShedder } from "@sluice/adaptive"
import { Criticality } from "@sluice/core"
import { Middleware, Trust } from "@sluice/http"
import { Deferred, Effect, Fiber, Queue } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { request as httpRequest, Agent } from "node:http"
import { routes, serve } from "./utils.js"

const CAPACITY = 8
// the default bound: capacity / 2 waiters
const QUEUE = 4

/** A plain node:http GET on its own socket; resolves with the status, or -1 when aborted or failed. */
const get = (url: string, level: string | undefined, signal?: AbortSignal) =>
  Effect.callback<number>((resume) => {
    const agent = new Agent({ keepAlive: false })
    const req = httpRequest(
      url,
      {
        agent,
        headers: level === undefined ? {} : { "x-sluice-criticality": level },
        ...(signal === undefined ? {} : { signal })
      },
      (response) => {
        response.resume()
        response.on("end", () => resume(Effect.succeed(response.statusCode ?? 0)))
        response.on("error", () => resume(Effect.succeed(-1)))
      }
    )
    req.on("error", () => resume(Effect.succeed(-1)))
    req.end()
    return Effect.sync(() => req.destroy())
  })

/**
 * A server whose handler records each admission (its criticality) and holds it until the
 * test releases one; `running` is the number inside the handler now, `maxRunning` the most ever.
 */
const makeServer = Effect.gen(function* () {
  const shedder = yield* LoadShedder.LoadShedder
  const started = yield* Queue.unbounded<Criticality.Criticality>()
  const releases: Array<Deferred.Deferred<void>> = []
  const state = { running: 0, maxRunning: 0, admitted: 0 }
  const handler = Effect.gen(function* () {
    const level = yield* Criticality.currentCriticality
    const release = yield* Deferred.make<void>()
    releases.push(release)
    state.running++
    state.admitted++
    state.maxRunning = Math.max(state.maxRunning, state.running)
    yield* Queue.offer(started, level)
    yield* Deferred.await(release)
    return HttpServerResponse.text(level)
  }).pipe(Effect.ensuring(Effect.sync(() => state.running--)))
  const app = yield* routes(HttpRouter.route("GET", "/", handler))
  const url = yield* serve(
    app.pipe(Middleware.loadShed(), Middleware.criticality({ trust: Trust.everyone, default: "SHEDDABLE" }))
  )
  const releaseAll = Effect.suspend(() =>
    Effect.forEach(releases.splice(0), (d) => Deferred.succeed(d, undefined))
  )
  /** waits (bounded) until `predicate` holds */
  const until = (predicate: () => boolean) =>
    Effect.gen(function* () {
      for (let i = 0; i < 400 && !predicate(); i++) yield* Effect.sleep("25 millis")
      return predicate()
    })
  return { url: url + "/", shedder, started, releases, state, releaseAll, until }
})

const ShedderLive = LoadShedder.layer({ capacity: CAPACITY })

describe("Middleware.loadShed() with LoadShedder.layer({ capacity: 8 }) under a flood (real sockets)", () => {
  it.live(
    "200 simultaneous SHEDDABLE arrivals at an idle server admit at most capacity + queue",
    () =>
      Effect.gen(function* () {
        const server = yield* makeServer
        const bound = server.shedder.bound!
        const fibers = yield* Effect.forEach(
          Array.from({ length: 200 }, () => get(server.url, "SHEDDABLE")),
          // forked by the test's own fiber: a child of a concurrent forEach's fiber ends with it
          (request) => Effect.forkChild(request)
        )
        // every arrival is answered or held: the refused ones get their 503 at once
        yield* server.until(() => server.state.running === CAPACITY && bound.queued === QUEUE)
        expect(server.state.running === CAPACITY && bound.queued === QUEUE).toBe(true)
        // give the stragglers time to arrive (bounded), then check the bound held
        yield* Effect.sleep("300 millis")
        expect(server.state.maxRunning).toBeLessThanOrEqual(CAPACITY)
        expect(bound.inFlight + bound.queued).toBeLessThanOrEqual(CAPACITY + QUEUE)
        // admitted so far: the handler's capacity, the rest wait in the queue or were refused
        expect(server.state.admitted).toBe(CAPACITY)
        // let every held request go as it arrives, until all are answered
        const releaser = yield* Effect.forkChild(
          Effect.forever(Effect.andThen(server.releaseAll, Effect.sleep("10 millis")))
        )
        const statuses = yield* Effect.forEach(fibers, (fiber) => Fiber.await(fiber))
        yield* Fiber.interrupt(releaser)
        const codes = statuses.map((exit) => (exit._tag === "Success" ? exit.value : -2))
        const ok = codes.filter((c) => c === 200).length
        // (connections still opening when the first ones are released may be admitted then)
        expect(ok).toBeGreaterThanOrEqual(CAPACITY)
        expect(codes.filter((c) => c === 503).length).toBe(200 - ok)
        expect(server.state.admitted).toBe(ok)
        expect(server.state.maxRunning).toBeLessThanOrEqual(CAPACITY)
      }).pipe(Effect.provide(ShedderLive)),
    { timeout: 60_000 }
  )

  it.live(
    "a CRITICAL arrival during a SHEDDABLE flood is admitted ahead of every queued less critical request",
    () =>
      Effect.gen(function* () {
        const server = yield* makeServer
        const bound = server.shedder.bound!
        // the flood fills the handler and the queue
        const flood = yield* Effect.forEach(
          Array.from({ length: 40 }, () => get(server.url, "SHEDDABLE")),
          // forked by the test's own fiber: a child of a concurrent forEach's fiber ends with it
          (request) => Effect.forkChild(request)
        )
        expect(yield* server.until(() => server.state.running === CAPACITY && bound.queued === QUEUE)).toBe(
          true
        )
        for (let i = 0; i < CAPACITY; i++) expect(yield* Queue.take(server.started)).toBe("SHEDDABLE")
        const critical = yield* Effect.forkChild(get(server.url, "CRITICAL"))
        // it waits: the queue is full of SHEDDABLE work, one of which gives way to it
        expect(
          yield* server.until(() => bound.queued === QUEUE && server.shedder.activeOfUnsafe("CRITICAL") === 1)
        ).toBe(true)
        expect(server.state.running).toBe(CAPACITY)
        // one permit frees: the next admission is the CRITICAL one, ahead of every queued SHEDDABLE
        yield* Deferred.succeed(server.releases.shift()!, undefined)
        expect(yield* Queue.take(server.started)).toBe("CRITICAL")
        expect(server.state.maxRunning).toBeLessThanOrEqual(CAPACITY)
        const releaser = yield* Effect.forkChild(
          Effect.forever(Effect.andThen(server.releaseAll, Effect.sleep("10 millis")))
        )
        yield* Effect.forEach(flood, (fiber) => Fiber.await(fiber))
        const criticalExit = yield* Fiber.await(critical)
        yield* Fiber.interrupt(releaser)
        expect(criticalExit._tag === "Success" && criticalExit.value).toBe(200)
      }).pipe(Effect.provide(ShedderLive)),
    { timeout: 60_000 }
  )

  it.live(
    "nothing leaks when flood connections drop mid-request: running and queued requests all settle",
    () =>
      Effect.gen(function* () {
        const server = yield* makeServer
        const bound = server.shedder.bound!
        const controller = new AbortController()
        const flood = yield* Effect.forEach(
          Array.from({ length: 40 }, () => get(server.url, "SHEDDABLE", controller.signal)),
          // forked by the test's own fiber: a child of a concurrent forEach's fiber ends with it
          (request) => Effect.forkChild(request)
        )
        expect(yield* server.until(() => server.state.running === CAPACITY && bound.queued === QUEUE)).toBe(
          true
        )
        // every flood connection drops while its request is running or queued
        controller.abort()
        yield* Effect.forEach(flood, (fiber) => Fiber.await(fiber))
        expect(
          yield* server.until(
            () =>
              server.state.running === 0 &&
              bound.inFlight === 0 &&
              bound.queued === 0 &&
              server.shedder.activeUnsafe() === 0
          )
        ).toBe(true)
        // and the server still has its whole capacity: 8 new requests all run at once
        const next = yield* Effect.forEach(
          Array.from({ length: CAPACITY }, () => get(server.url, "CRITICAL")),
          // forked by the test's own fiber: a child of a concurrent forEach's fiber ends with it
          (request) => Effect.forkChild(request)
        )
        expect(yield* server.until(() => server.state.running === CAPACITY)).toBe(true)
        expect(bound.queued).toBe(0)
        yield* server.releaseAll
        for (const fiber of next) {
          const exit = yield* Fiber.await(fiber)
          expect(exit._tag === "Success" && exit.value).toBe(200)
        }
      }).pipe(Effect.provide(ShedderLive)),
    { timeout: 60_000 }
  )
})

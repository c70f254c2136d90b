/**
 * System test: a caller that hangs up ends the work done for it, down the chain.
 * A → B → C over real sockets on 127.0.0.1: C refuses everything with a `503`; B's
 * handler calls C through a `SluiceHttpClient` that retries it, 300 ms apart, for
 * seconds. A (undici, as a Sluice client sends) gives up once C has seen B's first
 * attempt. B's handler must be interrupted, so its client stops retrying C for nobody:
 * C sees no new attempt once A has left (one already on its way is allowed).
 *
 * Node's server interrupts a request's fiber when its socket closes, but Effect 4 runs
 * what `HttpServer.serve` is given uninterruptibly and makes only a route's handler
 * interruptible: B is served each way the README and the examples serve, with the
 * handler a route's, or a plain app made interruptible. A plain app served as it is
 * runs to its end for nobody (10 of 10 attempts): the control case says so.
 *
 * Invariants, not timings: the waits are generous guards.
 */
import { createServer } from "node:http"
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Middleware, SluiceHttpClient } from "@sluice/http"
import { Context, Effect, Fiber, Layer, Schedule } from "effect"
import { HttpClient, HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { clientLayer, report, routes, serve } from "./harness.js"

/** Polls `done` every 10 ms until it holds, at most `guardMs` (a guard, not a bound on time). */
const eventually = (done: () => boolean, guardMs = 10_000) =>
  Effect.promise(async () => {
    for (let waited = 0; !done() && waited < guardMs; waited += 10)
      await new Promise((r) => setTimeout(r, 10))
    return done()
  })

const sleepReal = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

/** Serves B's handler (its Sluice middleware applied) one way; its base URL. */
type Pattern = (
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, never>
) => Effect.Effect<string, never, any>

const withSluice = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  app.pipe(Middleware.mapErrors, Middleware.criticality())

const patterns: Record<string, Pattern> = {
  // examples/three-tier: the routes' effect, wrapped, given to HttpServer.serve
  "HttpRouter.toHttpEffect + HttpServer.serve": (handler) =>
    Effect.gen(function* () {
      const app = yield* routes(HttpRouter.route("GET", "/relay", handler))
      return (yield* serve(withSluice(app))).base
    }),
  // the http README: HttpRouter.serve with the middleware global
  "HttpRouter.serve + global middleware": (handler) =>
    Effect.gen(function* () {
      const context = yield* Layer.build(
        HttpRouter.serve(
          Layer.mergeAll(
            HttpRouter.add("GET", "/relay", handler),
            HttpRouter.middleware((app) => withSluice(app), { global: true })
          )
        ).pipe(Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" })))
      ).pipe(Effect.orDie)
      return HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
    }),
  // a plain app: interruptible only once made so
  "a plain app, Effect.interruptible + HttpServer.serve": (handler) =>
    Effect.map(serve(withSluice(Effect.interruptible(handler))), ({ base }) => base)
}

/** A → B → C with B served by `pattern`; the facts once A has left and C has had 1.5 s more. */
const scenario = (pattern: Pattern) =>
  Effect.gen(function* () {
    // C: refuses everything, at once
    let attempts = 0
    const c = yield* serve(
      yield* routes(
        HttpRouter.route(
          "GET",
          "/work",
          Effect.sync(() => {
            attempts++
            return HttpServerResponse.empty({ status: 503 })
          })
        )
      )
    )
    // B: relays to C through a client that keeps retrying (10 tries, 300 ms apart)
    const client = yield* SluiceHttpClient.SluiceHttpClient
    let handled = 0
    let ended = 0
    const relay = Effect.suspend(() => {
      handled++
      return Effect.as(client.get(`${c.base}/work`), HttpServerResponse.text("ok"))
    }).pipe(Effect.ensuring(Effect.sync(() => ended++)))
    const b = yield* pattern(relay)

    // A: asks B, and gives up once C has seen B's first attempt
    const platform = yield* HttpClient.HttpClient
    const caller = yield* Effect.forkChild(platform.get(`${b}/relay`))
    const reached = yield* eventually(() => attempts >= 1)
    yield* Fiber.interrupt(caller)
    const atHangUp = attempts
    // B's handler ends (interrupted) well before its ten tries would (2.7 s) ...
    const interrupted = yield* eventually(() => ended >= 1, 2_000)
    // ... and C sees nothing more over the next 1.5 s (five retries' worth)
    yield* sleepReal(1_500)
    return { reached, handled, interrupted, atHangUp, attempts }
  }).pipe(
    Effect.provide(
      clientLayer({
        name: "system-hang-up",
        maxAttempts: 10,
        maxRetryAfter: "0 millis",
        schedule: Schedule.spaced("300 millis"),
        budget: { minRetriesPerSecond: 100 }
      })
    ),
    Effect.provide(NodeHttpClient.layerUndici)
  )

describe("system: a caller that hangs up", () => {
  it.live.each(Object.keys(patterns))("B stops retrying C for A once A has left (%s)", (name) =>
    Effect.gen(function* () {
      const figures = yield* scenario(patterns[name]!)
      yield* report("hang-up", { pattern: name, ...figures })
      const summary = JSON.stringify({ pattern: name, ...figures })
      expect(figures.reached, summary).toBe(true)
      expect(figures.handled, summary).toBe(1)
      expect(figures.interrupted, summary).toBe(true)
      expect(figures.attempts, summary).toBeLessThanOrEqual(figures.atHangUp + 1)
    })
  )

  // What the README's gotcha says: not a Sluice choice but Effect's, pinned so that the
  // statement is revisited if Effect changes it.
  it.live("control: a plain app given to HttpServer.serve as it is runs on for nobody", () =>
    Effect.gen(function* () {
      const figures = yield* scenario((handler) => Effect.map(serve(withSluice(handler)), ({ base }) => base))
      yield* report("hang-up", { pattern: "a plain app + HttpServer.serve", ...figures })
      const summary = JSON.stringify(figures)
      expect(figures.reached, summary).toBe(true)
      expect(figures.attempts, summary).toBeGreaterThan(figures.atHangUp + 1)
    })
  )
})

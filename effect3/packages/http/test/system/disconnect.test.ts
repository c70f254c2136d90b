/**
 * System test: a caller that goes away while its request waits in the server's own
 * queue (`Middleware.loadShed` with a `ConcurrencyLimiter`) leaves that queue at
 * once, and the handler never runs for it.
 *
 * Real sockets; invariants, not timings (the polls are bounded by a generous guard).
 */
import { request } from "node:http"
import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { ConcurrencyLimiter, LimitAlgorithm } from "@sluice/adaptive"
import { Middleware } from "@sluice/http"
import { Deferred, Effect } from "effect"
import { serve } from "./harness.js"

/** Polls `done` every 10 ms until it holds, at most `guardMs` (a guard, not a bound on time). */
const eventually = (done: () => boolean, guardMs = 10_000) =>
  Effect.promise(async () => {
    for (let waited = 0; !done() && waited < guardMs; waited += 10)
      await new Promise((resolve) => setTimeout(resolve, 10))
    return done()
  })

/** A GET whose socket the returned function destroys (the caller going away). */
const startGet = (url: string) => {
  const req = request(url)
  req.on("error", () => {})
  req.end()
  return () => req.destroy()
}

describe("system: a caller that disconnects while queued", () => {
  it.scoped("leaves the server's queue at once and never runs the handler", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({
        key: "server",
        maxQueue: 4,
        maxWait: "1 minute",
        algorithm: () => LimitAlgorithm.fixed(1)
      })
      const release = yield* Deferred.make<void>()
      let held = 0
      let served = 0
      const app = HttpRouter.empty.pipe(
        HttpRouter.get(
          "/hold",
          Effect.sync(() => held++).pipe(
            Effect.zipRight(Deferred.await(release)),
            Effect.as(HttpServerResponse.text("held"))
          )
        ),
        HttpRouter.get(
          "/work",
          Effect.sync(() => {
            served++
            return HttpServerResponse.text("done")
          })
        ),
        Middleware.loadShed({ limiter })
      )
      const { base } = yield* serve(app)
      // one request holds the only permit
      const holder = startGet(`${base}/hold`)
      expect(yield* eventually(() => held === 1)).toBe(true)
      // three wait for it; their callers go away
      const gone = Array.from({ length: 3 }, () => startGet(`${base}/work`))
      expect(yield* eventually(() => limiter.queued === 3)).toBe(true)
      for (const disconnect of gone) disconnect()
      expect(yield* eventually(() => limiter.queued === 0)).toBe(true)
      // the permit comes free: nobody is left to run the handler for
      yield* Deferred.succeed(release, undefined)
      expect(yield* eventually(() => limiter.inFlight === 0)).toBe(true)
      expect(served).toBe(0)
      holder()
    })
  )
})

/**
 * System test (Envoy #44412): a caller's disconnect or cancellation is never a success or a
 * drop. Over real sockets, a server's limiter (behind `Middleware.loadShed`) hears how each
 * request that held a permit ended: a caller that aborts its request while the handler runs
 * must be heard as `ignored` — not `success` (a round-trip time that measured nothing) and not
 * `dropped` (a limit that falls for a load that was never there). On the client side, a call
 * its caller interrupts is taken back from the throttle and settles nothing in the limiter.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConcurrencyLimiter, type LimitAlgorithm } from "@sluice/adaptive"
import { Middleware } from "@sluice/http"
import { Deferred, Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { report, routes, serve } from "./harness.js"

/** A fixed limit that records every sample it hears. */
const recording = (limit: number) => {
  const outcomes: Array<string> = []
  const algorithm: LimitAlgorithm.LimitAlgorithm = {
    name: "recording",
    limit,
    onSample: (sample) => {
      outcomes.push(sample.outcome)
      return limit
    }
  }
  return { algorithm, outcomes }
}

describe("system: a caller's disconnect is never a success or a drop (Envoy #44412)", () => {
  it.live("a request aborted while its handler runs is heard as ignored by the server's limiter", () =>
    Effect.gen(function* () {
      const { algorithm, outcomes } = recording(4)
      const limiter = yield* ConcurrencyLimiter.make({ key: "caller-disconnect", algorithm: () => algorithm })
      const started = yield* Deferred.make<void>()
      const app = (yield* routes(
        HttpRouter.route(
          "GET",
          "/hang",
          Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.as(HttpServerResponse.text("never"))
          )
        ),
        HttpRouter.route("GET", "/ok", Effect.succeed(HttpServerResponse.text("ok")))
      )).pipe(Middleware.loadShed({ limiter }), Middleware.mapErrors)
      const { base } = yield* serve(app)

      // One ordinary request: heard as a success.
      const ok = yield* Effect.promise(() => fetch(`${base}/ok`).then((r) => r.status))
      expect(ok).toBe(200)

      // One the caller aborts once its handler is running.
      const abort = new AbortController()
      const aborted = Effect.promise(() =>
        fetch(`${base}/hang`, { signal: abort.signal }).then(
          () => "answered",
          () => "aborted"
        )
      )
      const [how] = yield* Effect.all(
        [aborted, Deferred.await(started).pipe(Effect.andThen(Effect.sync(() => abort.abort())))],
        { concurrency: "unbounded" }
      )
      expect(how).toBe("aborted")
      // The server notices the closed connection and ends the handler (bounded guard).
      for (let waited = 0; waited < 10_000 && limiter.inFlight > 0; waited += 20) yield* Effect.sleep(20)
      const figures = { outcomes, inFlight: limiter.inFlight }
      yield* report("caller disconnect", figures)
      const summary = JSON.stringify(figures)
      expect(limiter.inFlight, summary).toBe(0)
      expect(outcomes, summary).toEqual(["success", "ignored"])
    })
  )
})

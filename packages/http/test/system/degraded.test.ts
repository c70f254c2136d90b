/**
 * System test: degraded answers over real sockets. The README's server stack with
 * `Middleware.degrade` directly outside `loadShed` (`LoadShedder.layer({ capacity: 4 })`, its
 * default bound), a full answer of 100 ms and a degraded one of 5 ms; closed-loop SHEDDABLE
 * workers (each sends again when answered) flood it while two CRITICAL workers call it.
 *
 * Invariants, never durations: every answer is a 200 (full or degraded) or a 503 (the degraded
 * path full too); every degraded answer carries `x-sluice-degraded: 1` and the server's
 * counter moves by exactly their number; CRITICAL gets only full answers; callers that hang up
 * while answered degraded give their slot back, so a second flood is degraded again; nothing is
 * left in flight.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { LoadShedder } from "@sluice/adaptive"
import type { Criticality } from "@sluice/core"
import { Middleware, Protocol, Trust } from "@sluice/http"
import { RetryHistogram } from "@sluice/retry"
import { Duration, Effect, Layer } from "effect"
import { HttpClient, HttpRouter, HttpServerResponse } from "effect/http"
import { metricSum, routes, serve } from "./harness.js"

interface Tally {
  full: number
  degraded: number
  refused: number
  other: number
}
const tally = (): Tally => ({ full: 0, degraded: 0, refused: 0, other: 0 })

describe("system: degraded answers under a flood", () => {
  it.live(
    "shed requests get degraded answers (marked, counted); CRITICAL is served in full; nothing leaks",
    () =>
      Effect.gen(function* () {
        let fullRunning = 0
        let degradedRunning = 0
        const full = Effect.acquireUseRelease(
          Effect.sync(() => fullRunning++),
          () => Effect.as(Effect.sleep("100 millis"), HttpServerResponse.text("full")),
          () => Effect.sync(() => fullRunning--)
        )
        const cheap = Effect.acquireUseRelease(
          Effect.sync(() => degradedRunning++),
          () => Effect.as(Effect.sleep("5 millis"), HttpServerResponse.text("first shard")),
          () => Effect.sync(() => degradedRunning--)
        )
        const app = yield* routes(HttpRouter.route("GET", "/search", full))
        const { base } = yield* serve(
          app.pipe(
            Middleware.loadShed(),
            Middleware.degrade({ handler: cheap, concurrency: 8 }),
            Middleware.retryGuard(),
            Middleware.mapErrors,
            Middleware.criticality({ trust: Trust.loopback })
          )
        )
        const shedder = yield* LoadShedder.LoadShedder
        const client = yield* HttpClient.HttpClient
        const call = (level: Criticality.Criticality, into: Tally, timeout?: Duration.Input) => {
          const sent = client.get(`${base}/search`, { headers: { "x-sluice-criticality": level } }).pipe(
            Effect.tap((response) =>
              Effect.sync(() => {
                if (response.status === 503) into.refused++
                else if (response.status !== 200) into.other++
                else if (Protocol.isDegraded(response.headers)) into.degraded++
                else into.full++
              })
            ),
            Effect.flatMap((response) => response.text)
          )
          return Effect.ignore(timeout === undefined ? sent : Effect.timeout(sent, timeout))
        }
        // `workers` closed loops of `calls` calls each
        const loops = (workers: number, calls: number, run: () => Effect.Effect<void>) =>
          Effect.forEach(Array.from({ length: workers }), () => Effect.repeat(run(), { times: calls - 1 }), {
            concurrency: "unbounded",
            discard: true
          })
        const degradedCounter = (level: Criticality.Criticality) =>
          metricSum("sluice_http_server_degraded", { criticality: level })

        const before = {
          SHEDDABLE: yield* degradedCounter("SHEDDABLE"),
          CRITICAL: yield* degradedCounter("CRITICAL")
        }
        const sheddable = tally()
        const critical = tally()
        yield* Effect.all(
          [loops(24, 8, () => call("SHEDDABLE", sheddable)), loops(2, 6, () => call("CRITICAL", critical))],
          { concurrency: 2, discard: true }
        )
        // the flood was answered, most of it degraded; every degraded answer counted once
        expect(sheddable.other + critical.other).toBe(0)
        expect(sheddable.full + sheddable.degraded + sheddable.refused).toBe(24 * 8)
        // more than the degraded path's bound: a slot never given back would show below
        expect(sheddable.degraded).toBeGreaterThan(8)
        expect((yield* degradedCounter("SHEDDABLE")) - before.SHEDDABLE).toBe(sheddable.degraded)
        // CRITICAL: every answer full
        expect(critical).toEqual({ full: 12, degraded: 0, refused: 0, other: 0 })
        expect((yield* degradedCounter("CRITICAL")) - before.CRITICAL).toBe(0)

        // Callers that hang up during their degraded answer (and during full ones), then a
        // second flood: the degraded path's slots all came back, so it answers again.
        const impatient = tally()
        yield* loops(24, 4, () => call("SHEDDABLE", impatient, "2 millis"))
        const again = tally()
        yield* loops(24, 5, () => call("SHEDDABLE", again))
        expect(again.degraded).toBeGreaterThan(0)
        expect(again.other).toBe(0)

        // nothing left in flight: handlers, the shedder, its bound
        for (
          let i = 0;
          i < 100 && (fullRunning > 0 || degradedRunning > 0 || shedder.activeUnsafe() > 0);
          i++
        )
          yield* Effect.sleep("20 millis")
        expect({ fullRunning, degradedRunning, active: shedder.activeUnsafe() }).toEqual({
          fullRunning: 0,
          degradedRunning: 0,
          active: 0
        })
        expect(shedder.bound?.inFlight).toBe(0)
        expect(shedder.bound?.queued).toBe(0)
      }).pipe(
        Effect.provide(
          Layer.mergeAll(
            LoadShedder.layer({ capacity: 4 }),
            RetryHistogram.layer(),
            NodeHttpClient.layerUndici
          )
        )
      ),
    60_000
  )
})

/**
 * `Middleware.degrade` outside `Middleware.loadShed`: a request the shedder refuses is answered
 * by the degraded handler (marked `x-sluice-degraded: 1`, counted by criticality) while the
 * degraded path has room; the work the shedder admits gets the full answer and reads the load
 * it was judged by through `ServerLoad`. Under TestClock: the shedder's utilization is the
 * smoothed work in flight, so the clock is moved to let it settle.
 */
import { describe, expect, it } from "@effect/vitest"
import { LoadShedder } from "@sluice/adaptive"
import { Criticality, ServerLoad } from "@sluice/core"
import { Middleware, Protocol } from "@sluice/http"
import { Deferred, Effect, Exit, Fiber, Metric } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { TestClock } from "effect/testing"

const turns = Effect.repeat(Effect.yieldNow, { times: 10 })

const metricCount = (id: string, attributes: Record<string, string>) =>
  Effect.map(Metric.snapshot, (snapshots) =>
    snapshots
      .filter(
        (s) => s.id === id && Object.entries(attributes).every(([k, v]) => (s.attributes ?? {})[k] === v)
      )
      .reduce((sum, s) => sum + Number((s.state as { count: number }).count), 0)
  )
const degradedCount = (criticality: Criticality.Criticality) =>
  metricCount("sluice_http_server_degraded", { criticality })

const withRequest = Effect.provideService(
  HttpServerRequest.HttpServerRequest,
  HttpServerRequest.fromWeb(new Request("http://localhost/search?q=x"))
)

/**
 * A shedder of capacity 4 that sheds SHEDDABLE from 0.5, with 3 CRITICAL requests held in
 * flight for long enough that its smoothed utilization is 0.75: SHEDDABLE is shed, CRITICAL
 * (from 1.0) and SHEDDABLE_PLUS (from 0.9) are admitted.
 */
const loaded = Effect.gen(function* () {
  const shedder = yield* LoadShedder.make({ capacity: 4, bound: false, thresholds: { SHEDDABLE: 0.5 } })
  const release = yield* Deferred.make<void>()
  const hold = Middleware.loadShed({ shedder })(
    Effect.as(Deferred.await(release), HttpServerResponse.text("held"))
  )
  const held = yield* Effect.forkChild(
    Effect.all([hold, hold, hold], { concurrency: "unbounded" }).pipe(Criticality.withCriticality("CRITICAL"))
  )
  yield* turns
  yield* TestClock.adjust("30 seconds")
  expect(shedder.utilizationUnsafe()).toBeCloseTo(0.75, 3)
  return { shedder, release, held }
})

describe("Middleware.degrade", () => {
  it.effect(
    "a shed request gets the degraded answer, marked and counted; admitted work gets the full one",
    () =>
      Effect.gen(function* () {
        const { release, shedder, held } = yield* loaded
        const seen: Array<ServerLoad.Snapshot> = []
        const full = Effect.gen(function* () {
          seen.push(yield* ServerLoad.get)
          return HttpServerResponse.text("full")
        })
        const cheap = Effect.gen(function* () {
          seen.push(yield* ServerLoad.get)
          return HttpServerResponse.text("cheap")
        })
        const app = full.pipe(Middleware.loadShed({ shedder }), Middleware.degrade({ handler: cheap }))
        const before = yield* degradedCount("SHEDDABLE")
        const criticalBefore = yield* degradedCount("CRITICAL")

        const sheddable = yield* app.pipe(Criticality.withCriticality("SHEDDABLE"))
        expect(sheddable.status).toBe(200)
        expect(Protocol.isDegraded(sheddable.headers)).toBe(true)
        // the header is its only overload signal: a client's limits learn a success from it
        expect(sheddable.headers["retry-after"]).toBeUndefined()
        expect(sheddable.headers["x-sluice-throttle"]).toBeUndefined()
        expect(sheddable.headers["x-sluice-dont-retry"]).toBeUndefined()
        expect(yield* degradedCount("SHEDDABLE")).toBe(before + 1)

        const critical = yield* app.pipe(Criticality.withCriticality("CRITICAL"))
        expect(critical.status).toBe(200)
        expect(Protocol.isDegraded(critical.headers)).toBe(false)
        expect(yield* degradedCount("CRITICAL")).toBe(criticalBefore)

        // the degraded handler and the full one read the shedder's load: SHEDDABLE is shed
        expect(seen).toHaveLength(2)
        for (const load of seen) {
          expect(load.utilization).toBeCloseTo(0.75, 2)
          expect(load.leastAdmitted).toBe("SHEDDABLE_PLUS")
          expect(load.overloaded).toBe(true)
        }
        // degraded work is not the shedder's load: only the 3 held requests are
        expect(shedder.activeUnsafe()).toBe(3)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(held)
        expect(shedder.activeUnsafe()).toBe(0)
      }).pipe(withRequest)
  )

  it.effect(
    "the degraded path has its own bound: beyond it, and where `when` says no, the request is refused (503)",
    () =>
      Effect.gen(function* () {
        const { release, shedder, held } = yield* loaded
        const cheapGate = yield* Deferred.make<void>()
        const cheap = Effect.as(Deferred.await(cheapGate), HttpServerResponse.text("cheap"))
        const app = Effect.succeed(HttpServerResponse.text("full")).pipe(
          Middleware.loadShed({ shedder }),
          Middleware.degrade({ handler: cheap, concurrency: 1 })
        )
        const first = yield* Effect.forkChild(app.pipe(Criticality.withCriticality("SHEDDABLE")))
        yield* turns
        const second = yield* app.pipe(Criticality.withCriticality("SHEDDABLE"))
        expect(second.status).toBe(503)
        expect(Protocol.isDegraded(second.headers)).toBe(false)
        yield* Deferred.succeed(cheapGate, undefined)
        const firstAnswer = yield* Fiber.join(first)
        expect(Protocol.isDegraded(firstAnswer.headers)).toBe(true)
        // the slot came back
        const third = yield* app.pipe(Criticality.withCriticality("SHEDDABLE"))
        expect(Protocol.isDegraded(third.headers)).toBe(true)

        // `when` refuses: as without degrade; a `when` that throws refuses too
        for (const when of [
          () => false,
          (): boolean => {
            throw new Error("bad predicate")
          }
        ]) {
          const picky = Effect.succeed(HttpServerResponse.text("full")).pipe(
            Middleware.loadShed({ shedder }),
            Middleware.degrade({ handler: cheap, when })
          )
          expect((yield* picky.pipe(Criticality.withCriticality("SHEDDABLE"))).status).toBe(503)
        }
        // `when` reads the request
        const byPath = Effect.succeed(HttpServerResponse.text("full")).pipe(
          Middleware.loadShed({ shedder }),
          Middleware.degrade({ handler: cheap, when: (request) => request.url.startsWith("/search") })
        )
        expect(
          Protocol.isDegraded((yield* byPath.pipe(Criticality.withCriticality("SHEDDABLE"))).headers)
        ).toBe(true)

        // without degrade, or with degrade inside loadShed, a shed request is refused
        const plain = Effect.succeed(HttpServerResponse.text("full")).pipe(Middleware.loadShed({ shedder }))
        expect((yield* plain.pipe(Criticality.withCriticality("SHEDDABLE"))).status).toBe(503)
        const inside = Effect.succeed(HttpServerResponse.text("full")).pipe(
          Middleware.degrade({ handler: cheap }),
          Middleware.loadShed({ shedder })
        )
        expect((yield* inside.pipe(Criticality.withCriticality("SHEDDABLE"))).status).toBe(503)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(held)
      }).pipe(withRequest)
  )

  it.effect("a degraded handler that is interrupted or fails gives its slot back", () =>
    Effect.gen(function* () {
      const { release, shedder, held } = yield* loaded
      let mode: "hang" | "fail" | "ok" = "hang"
      const cheap = Effect.suspend(() =>
        mode === "hang"
          ? Effect.as(Effect.never, HttpServerResponse.text("never"))
          : mode === "fail"
            ? Effect.fail("broken" as const)
            : Effect.succeed(HttpServerResponse.text("cheap"))
      )
      const app = Effect.succeed(HttpServerResponse.text("full")).pipe(
        Middleware.loadShed({ shedder }),
        Middleware.degrade({ handler: cheap, concurrency: 1 })
      )
      const hanging = yield* Effect.forkChild(app.pipe(Criticality.withCriticality("SHEDDABLE")))
      yield* turns
      yield* Fiber.interrupt(hanging)
      mode = "fail"
      const failed = yield* Effect.exit(app.pipe(Criticality.withCriticality("SHEDDABLE")))
      expect(Exit.isFailure(failed)).toBe(true)
      mode = "ok"
      const answer = yield* app.pipe(Criticality.withCriticality("SHEDDABLE"))
      expect(Protocol.isDegraded(answer.headers)).toBe(true)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(held)
    }).pipe(withRequest)
  )

  it("bad options are refused where the server is assembled, every field named", () => {
    const handler = Effect.succeed(HttpServerResponse.text("cheap"))
    expect(() => Middleware.degrade({ handler, concurrency: 0 })).toThrow(
      /concurrency: expected a positive integer/
    )
    expect(() => Middleware.degrade({ handler, concurrency: 1.5, colour: "red" } as never)).toThrow(
      /Middleware.degrade: invalid options\ncolour: is not an option\nconcurrency/
    )
    expect(() => Middleware.degrade({} as never)).toThrow(/handler: expected an Effect/)
  })

  it.effect("ServerLoad outside a shedder reads as an idle server", () =>
    Effect.gen(function* () {
      expect(yield* ServerLoad.get).toEqual({ utilization: 0, leastAdmitted: "SHEDDABLE", overloaded: false })
      const busy: ServerLoad.ServerLoad = { utilization: () => 1.2, admits: () => false }
      const none = yield* ServerLoad.get.pipe(Effect.provideService(ServerLoad.currentServerLoad, busy))
      expect(none).toEqual({ utilization: 1.2, leastAdmitted: undefined, overloaded: true })
    })
  )
})

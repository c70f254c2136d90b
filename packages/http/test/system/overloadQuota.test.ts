/**
 * System test: quotas that bite only in overload, over real sockets. A customer over its
 * plan is served by an idle server (no denial) and, once the server is full, gives way to
 * within-plan customers of its criticality with its quota's 429 and headers, while a less
 * critical within-plan customer gives way to it (criticality first).
 *
 * Real `NodeHttpServer` on 127.0.0.1, a plain undici client (no client policies), the memory
 * store. The server is held full by handlers that wait for the test, and each step waits
 * until the server has seen the previous one: the invariants are counts and statuses, never
 * durations.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { LoadShedder } from "@sluice/adaptive"
import { Middleware } from "@sluice/http"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { HttpClient, HttpRouter, HttpServerResponse } from "effect/http"
import { routes, serve } from "./harness.js"

const QuotaLive = Quota.layer().pipe(
  Layer.provide(QuotaStore.layerMemory()),
  Layer.provide(
    QuotaConfig.layer({
      default: { tiers: [{ name: "spike", algorithm: "gcra", limit: 1000, period: "1 second" }] },
      clients: {
        abuser: { tiers: [{ name: "spike", algorithm: "gcra", limit: 2, period: "1 minute", burst: 2 }] }
      }
    })
  )
)

describe("system: quotas that bite only in overload", () => {
  it.live(
    "idle: the over-plan customer is served; full: it is shed with its quota's 429 before within-plan customers of its level",
    () =>
      Effect.gen(function* () {
        // The bound alone decides (the shedder's thresholds are out of reach): 4 permits, a
        // queue of 2, and a wait long enough for a loaded machine.
        const shedder = yield* LoadShedder.make({
          capacity: 4,
          thresholds: { SHEDDABLE: 100, SHEDDABLE_PLUS: 100, CRITICAL: 100, CRITICAL_PLUS: 100 },
          bound: { maxQueue: 2, maxWait: "60 seconds" }
        })
        const bound = shedder.bound!
        const release = yield* Deferred.make<void>()
        const app = yield* routes(
          HttpRouter.route("GET", "/quick", HttpServerResponse.text("ok")),
          HttpRouter.route("GET", "/hold", Effect.as(Deferred.await(release), HttpServerResponse.text("ok")))
        )
        const { base } = yield* serve(
          app.pipe(
            Middleware.loadShed({ shedder }),
            Middleware.quota({ client: (req) => req.headers["x-api-key"], enforce: "overload" }),
            Middleware.mapErrors,
            Middleware.criticality()
          )
        )
        const client = yield* HttpClient.HttpClient
        const call = (path: string, key: string, level = "CRITICAL") =>
          Effect.scoped(
            Effect.flatMap(
              client.get(base + path, { headers: { "x-api-key": key, "x-sluice-criticality": level } }),
              (response) => Effect.as(response.text, response)
            )
          )
        const until = (condition: () => boolean) =>
          Effect.gen(function* () {
            for (let i = 0; i < 3000 && !condition(); i++) yield* Effect.sleep("10 millis")
            expect(condition()).toBe(true)
          })

        // Idle: the abuser sends 3 times its plan; every request is served.
        const idle = yield* Effect.forEach(Array.from({ length: 6 }), () => call("/quick", "abuser"))
        expect(idle.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200])
        expect(idle[5]!.headers["ratelimit"]).toContain(`"spike";r=0`)

        // Full: 4 within-plan CRITICAL requests hold every permit.
        const held = []
        for (let i = 0; i < 4; i++) held.push(yield* Effect.forkChild(call("/hold", "acme")))
        yield* until(() => bound.inFlight === 4)
        // A within-plan SHEDDABLE request and an over-plan CRITICAL one wait (the queue holds 2).
        const sheddable = yield* Effect.forkChild(call("/hold", "acme", "SHEDDABLE"))
        yield* until(() => bound.queued === 1)
        const over1 = yield* Effect.forkChild(call("/hold", "abuser"))
        yield* until(() => bound.queued === 2)
        // Criticality first: another over-plan CRITICAL request displaces the within-plan SHEDDABLE one.
        const over2 = yield* Effect.forkChild(call("/hold", "abuser"))
        const displacedSheddable = yield* Fiber.join(sheddable)
        expect(displacedSheddable.status).toBe(503)
        // Within-plan CRITICAL requests displace the over-plan ones: the quota's 429 and hint.
        const within = [yield* Effect.forkChild(call("/hold", "acme"))]
        const firstShed = yield* Fiber.join(over2)
        within.push(yield* Effect.forkChild(call("/hold", "acme")))
        const secondShed = yield* Fiber.join(over1)
        yield* until(() => bound.queued === 2)
        // A queue full of within-plan CRITICAL work: the next over-plan request is refused at once.
        const refused = yield* call("/hold", "abuser")
        for (const shed of [firstShed, secondShed, refused]) {
          expect(shed.status).toBe(429)
          expect(Number(shed.headers["retry-after"])).toBeGreaterThanOrEqual(1)
          expect(shed.headers["ratelimit-policy"]).toContain(`"spike";q=2`)
          expect(shed.headers["ratelimit"]).toContain(`"spike";r=0`)
        }
        yield* Deferred.succeed(release, undefined)
        const served = yield* Effect.forEach([...held, ...within], Fiber.join)
        expect(served.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200])
        expect(shedder.activeUnsafe()).toBe(0)
      }).pipe(Effect.provide(Layer.merge(QuotaLive, NodeHttpClient.layerUndici))),
    60_000
  )
})

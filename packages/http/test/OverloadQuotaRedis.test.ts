// `Middleware.quota({ enforce: "overload" })` over the Redis store (REDIS_URL, default
// redis://127.0.0.1:6379): the same decisions as the memory store, the charge of an admitted
// over-plan request lands in Redis, and a blocked client is refused at once.
import { describe, expect, it } from "@effect/vitest"
import { LoadShedder } from "@sluice/adaptive"
import { Criticality } from "@sluice/core"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import { Middleware } from "@sluice/http"
import { Quota, QuotaConfig } from "@sluice/quota"
import * as IoRedis from "@sluice/quota/IoRedis"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const unique = (name: string) => `test:${name}:${process.pid}:${Math.random().toString(36).slice(2)}:`

const QuotaLive = () =>
  Quota.layer({ deadline: "2 seconds" }).pipe(
    Layer.provide(IoRedis.layerStoreShared({ prefix: unique("overload-quota") })),
    Layer.provide(
      QuotaConfig.layer({
        default: { tiers: [{ name: "spike", algorithm: "gcra", limit: 1000, period: "1 second" }] },
        clients: {
          abuser: {
            tiers: [
              { name: "spike", algorithm: "gcra", limit: 2, period: "1 minute", burst: 2 },
              { name: "count", algorithm: "sliding-window", limit: 100, period: "1 hour" }
            ]
          }
        }
      })
    ),
    Layer.provide(IoRedisClient.layer({ url: REDIS_URL }))
  )

const request = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  key: string,
  level: Criticality.Criticality = "CRITICAL"
) =>
  app.pipe(
    Criticality.withCriticality(level),
    Effect.provideService(
      HttpServerRequest.HttpServerRequest,
      HttpServerRequest.fromWeb(new Request("http://localhost/", { headers: { "x-api-key": key } }))
    )
  )

const quota = Middleware.quota({ client: (req) => req.headers["x-api-key"], enforce: "overload" })

describe("Middleware.quota enforce: overload over Redis", () => {
  it.live(
    "idle: over-plan served and charged in Redis; overloaded: shed with the quota's 429; blocked: refused",
    () =>
      Effect.gen(function* () {
        const shedder = yield* LoadShedder.make({ capacity: 4, bound: false, smoothing: "1 millis" })
        const release = yield* Deferred.make<void>()
        const held = Effect.as(Deferred.await(release), HttpServerResponse.text("ok"))
        const app = held.pipe(Middleware.loadShed({ shedder }), quota)
        const quick = Effect.succeed(HttpServerResponse.text("ok")).pipe(
          Middleware.loadShed({ shedder }),
          quota
        )

        // idle: 2 within the plan, 3 over it, all served, all counted on the hourly tier
        const idle: Array<number> = []
        for (let i = 0; i < 5; i++) idle.push((yield* request(quick, "abuser")).status)
        expect(idle).toEqual([200, 200, 200, 200, 200])
        expect((yield* Quota.get("abuser")).tiers.map((t) => t.remaining)).toEqual([0, 95])

        // overloaded at CRITICAL: 2 within-plan and 2 over-plan requests hold the capacity of 4
        const fibers = [
          yield* Effect.forkChild(request(app, "acme")),
          yield* Effect.forkChild(request(app, "acme")),
          yield* Effect.forkChild(request(app, "abuser")),
          yield* Effect.forkChild(request(app, "abuser"))
        ]
        for (let i = 0; i < 200 && shedder.activeUnsafe() < 4; i++) yield* Effect.sleep("5 millis")
        expect(shedder.overQuotaOfUnsafe("CRITICAL")).toBe(2)
        yield* Effect.sleep("50 millis")
        const shed = yield* request(app, "abuser")
        expect(shed.status).toBe(429)
        expect(Number(shed.headers["retry-after"])).toBeGreaterThanOrEqual(1)
        expect(shed.headers["ratelimit"]).toContain(`"spike";r=0`)
        const within = yield* Effect.forkChild(request(app, "acme"))
        yield* Deferred.succeed(release, undefined)
        for (const fiber of [...fibers, within]) expect((yield* Fiber.join(fiber)).status).toBe(200)
        // the two admitted over the plan were charged, the shed one was not
        expect((yield* Quota.get("abuser")).tiers[1]!.remaining).toBe(93)

        // a block is a ban, not a plan: refused at once, even on an idle server
        yield* Quota.block("abuser", "1 minute")
        expect((yield* request(quick, "abuser")).status).toBe(429)
      }).pipe(Effect.provide(QuotaLive()))
  )
})

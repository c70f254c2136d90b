// Quotas that bite only in overload (`Middleware.quota({ enforce: "overload" })`): a customer
// over its plan is served while the server has room and shed first, within its criticality,
// when it has none, with its quota's 429. TestClock, the memory store, no sockets.
import { describe, expect, it } from "@effect/vitest"
import { LoadShedder } from "@sluice/adaptive"
import { Criticality } from "@sluice/core"
import { Middleware } from "@sluice/http"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { HttpServerRequest, HttpServerResponse } from "effect/http"

// "abuser" has a tiny plan; everyone else a large one. A `count` tier shows what is charged.
const QuotaLive = Quota.layer().pipe(
  Layer.provide(QuotaStore.layerMemory()),
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
  )
)

const turns = Effect.gen(function* () {
  for (let i = 0; i < 50; i++) yield* Effect.yieldNow
})

/** Runs `app` as the request of `key` at `level`. */
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

const quota = (enforce: "always" | "overload") =>
  Middleware.quota({ client: (req) => req.headers["x-api-key"], enforce })

describe("Middleware.quota enforce: overload", () => {
  it.effect("an idle server serves a customer over its plan and charges it; always refuses it", () =>
    Effect.gen(function* () {
      const shedder = yield* LoadShedder.make({ capacity: 10 })
      const ok = Effect.succeed(HttpServerResponse.text("ok"))
      const app = (enforce: "always" | "overload") =>
        ok.pipe(Middleware.loadShed({ shedder }), quota(enforce))
      const always = []
      for (let i = 0; i < 5; i++) always.push((yield* request(app("always"), "abuser")).status)
      expect(always).toEqual([200, 200, 429, 429, 429])
      // the always mode charged the two it admitted
      expect((yield* Quota.get("abuser")).tiers.map((t) => t.remaining)).toEqual([0, 98])

      const overload: Array<number> = []
      let last: HttpServerResponse.HttpServerResponse | undefined
      for (let i = 0; i < 5; i++) {
        last = yield* request(app("overload"), "abuser")
        overload.push(last.status)
      }
      expect(overload).toEqual([200, 200, 200, 200, 200])
      // served over its plan, and still told it is: the quota's headers on the answer
      expect(last!.headers["ratelimit"]).toContain(`"spike";r=0`)
      // every admitted request was charged on every tier (down to empty at most)
      expect((yield* Quota.get("abuser")).tiers.map((t) => t.remaining)).toEqual([0, 93])
    }).pipe(Effect.provide(QuotaLive))
  )

  it.effect(
    "the shedder sheds over-plan work first within its level, with the quota's 429; criticality first",
    () =>
      Effect.gen(function* () {
        // no bound: the shedder alone, utilization against 4
        const shedder = yield* LoadShedder.make({ capacity: 4, bound: false, smoothing: "100 millis" })
        const release = yield* Deferred.make<void>()
        const held = Effect.as(Deferred.await(release), HttpServerResponse.text("ok"))
        const app = held.pipe(Middleware.loadShed({ shedder }), quota("overload"))
        // the abuser spends its plan, then two more are admitted over it (the server has room)
        const fibers: Array<Fiber.Fiber<HttpServerResponse.HttpServerResponse, unknown>> = []
        for (let i = 0; i < 4; i++) fibers.push(yield* Effect.forkChild(request(app, "abuser")))
        yield* turns
        expect(shedder.activeOfUnsafe("CRITICAL")).toBe(4)
        expect(shedder.overQuotaOfUnsafe("CRITICAL")).toBe(2)
        // utilization of CRITICAL as a whole: 1.0; of its within-plan work: 0.5
        yield* TestClock.adjust("2 seconds")
        expect(shedder.wouldShedUnsafe("CRITICAL", undefined, true)).toBe(true)
        expect(shedder.wouldShedUnsafe("CRITICAL")).toBe(false)

        const over = yield* request(app, "abuser")
        expect(over.status).toBe(429)
        expect(Number(over.headers["retry-after"])).toBeGreaterThanOrEqual(1)
        expect(over.headers["ratelimit-policy"]).toContain(`"spike";q=2`)
        expect(over.headers["ratelimit"]).toContain(`"spike";r=0`)
        // a within-plan customer of the same level is served
        const within = yield* Effect.forkChild(request(app, "acme"))
        // criticality first: within-plan SHEDDABLE_PLUS sees all CRITICAL work and is shed (503)...
        expect((yield* request(app, "acme", "SHEDDABLE_PLUS")).status).toBe(503)
        // ... while over-plan CRITICAL_PLUS sees none of it
        const overPlus = yield* Effect.forkChild(request(app, "abuser", "CRITICAL_PLUS"))
        yield* turns
        expect(shedder.overQuotaOfUnsafe("CRITICAL_PLUS")).toBe(1)
        yield* Deferred.succeed(release, undefined)
        expect((yield* Fiber.join(within)).status).toBe(200)
        expect((yield* Fiber.join(overPlus)).status).toBe(200)
        for (const fiber of fibers) expect((yield* Fiber.join(fiber)).status).toBe(200)
        // the shed request was not charged: 2 within the plan and 3 over it, 1 shed
        expect((yield* Quota.get("abuser")).tiers[1]!.remaining).toBe(95)
        expect(shedder.activeUnsafe()).toBe(0)
      }).pipe(Effect.provide(QuotaLive))
  )

  it.effect(
    "a customer denied lately is over its plan for every request until twice the hint has passed",
    () =>
      Effect.gen(function* () {
        const shedder = yield* LoadShedder.make({ capacity: 10 })
        const marks: Array<boolean> = []
        const app = Effect.flatMap(Effect.service(Criticality.currentOverQuota), (over) => {
          marks.push(over !== undefined)
          return Effect.succeed(HttpServerResponse.text("ok"))
        }).pipe(Middleware.loadShed({ shedder }), quota("overload"))
        // 2 per minute, a bucket of 2: the third is denied with a hint of 30 s
        for (let i = 0; i < 3; i++) expect((yield* request(app, "abuser")).status).toBe(200)
        expect(marks).toEqual([false, false, true])
        // 30 s on, its tier admits one more: still over plan (denied 30 s ago, hint 30 s)
        yield* TestClock.adjust("30 seconds")
        expect((yield* request(app, "abuser")).status).toBe(200)
        expect(marks[3]).toBe(true)
        // 60 s after the denial, and with a unit in its bucket: within its plan again
        yield* TestClock.adjust("31 seconds")
        expect((yield* request(app, "abuser")).status).toBe(200)
        expect(marks[4]).toBe(false)
        // charged once per request: 2 + 1 denied (penalty) + 2 admitted by the tier
        expect((yield* Quota.get("abuser")).tiers[1]!.remaining).toBe(95)
      }).pipe(Effect.provide(QuotaLive))
  )

  it.effect("a full bound refuses over-plan work at once with the quota's 429; within-plan work waits", () =>
    Effect.gen(function* () {
      // the default bound: 2 permits, a queue of 1; the shedder itself never sheds CRITICAL here
      const shedder = yield* LoadShedder.make({
        capacity: 2,
        thresholds: { CRITICAL: 10, CRITICAL_PLUS: 10 }
      })
      const release = yield* Deferred.make<void>()
      const held = Effect.as(Deferred.await(release), HttpServerResponse.text("ok"))
      const app = held.pipe(Middleware.loadShed({ shedder }), quota("overload"))
      yield* request(Effect.succeed(HttpServerResponse.text("ok")).pipe(quota("overload")), "abuser")
      yield* request(Effect.succeed(HttpServerResponse.text("ok")).pipe(quota("overload")), "abuser")
      const running = [
        yield* Effect.forkChild(request(app, "acme")),
        yield* Effect.forkChild(request(app, "acme"))
      ]
      yield* turns
      // the abuser, over its plan, finds no permit and nobody less critical to go ahead of:
      // the quota's 429 at once, without a place in the queue (a wait would end at its deadline)
      const over = yield* request(app, "abuser")
      expect(over.status).toBe(429)
      expect(over.headers["ratelimit"]).toContain(`"spike";r=0`)
      expect(shedder.bound!.queued).toBe(0)
      // a within-plan customer of its level waits for the next permit
      const within = yield* Effect.forkChild(request(app, "acme"))
      yield* turns
      expect(shedder.bound!.queued).toBe(1)
      yield* Deferred.succeed(release, undefined)
      for (const fiber of [...running, within]) expect((yield* Fiber.join(fiber)).status).toBe(200)
    }).pipe(Effect.provide(QuotaLive))
  )
})

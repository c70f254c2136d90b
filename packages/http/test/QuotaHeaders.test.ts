import { HttpClient, HttpRouter, HttpServerResponse } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { Errors, Quota, QuotaConfig, QuotaStore } from "@sluice/core"
import { Middleware, Protocol, ResponseDecoder } from "@sluice/http"
import { serve } from "./utils.js"

// No QuotaConfig in the app's context: the windows come from the decisions
const QuotaLive = Quota.layer().pipe(
  Layer.provide(QuotaStore.layerMemory()),
  Layer.provide(
    QuotaConfig.layer({
      default: {
        tiers: [
          // 7 per second with bursts of 5: the bucket refills in 5 × 1000 / 7 ms, w = 1 s
          { name: "spike", algorithm: "gcra", limit: 7, period: "1 second", burst: 5 },
          { name: "count", algorithm: "sliding-window", limit: 8, period: "1 hour" }
        ]
      }
    })
  )
)

describe("quota headers", () => {
  it.scopedLive(
    "RateLimit-Policy always has w; on 429 Retry-After is never earlier than a denying tier's t",
    () =>
      Effect.gen(function* () {
        const app = HttpRouter.empty.pipe(
          HttpRouter.get("/", Effect.succeed(HttpServerResponse.text("ok"))),
          Middleware.quota({
            client: (req) => req.headers["x-api-key"],
            cost: (req) => Number(req.headers["x-cost"] ?? "1")
          })
        )
        const base = yield* serve(app)
        const client = yield* HttpClient.HttpClient
        const call = (key: string, cost = 1) =>
          client.get(base + "/", { headers: { "x-api-key": key, "x-cost": String(cost) } })
        const first = yield* call("acme")
        expect(first.headers["ratelimit-policy"]).toBe(`"spike";q=5;w=1, "count";q=8;w=3600`)
        for (let i = 0; i < 4; i++) expect((yield* call("acme")).status).toBe(200)
        const denied = yield* call("acme")
        expect(denied.status).toBe(429)
        expect(denied.headers["ratelimit-policy"]).toBe(`"spike";q=5;w=1, "count";q=8;w=3600`)
        // only the denying tier, its t the time until the request passes (143 ms -> 1 s)
        const items = Protocol.parseRateLimit(denied.headers["ratelimit"])
        expect(items).toEqual([{ name: "spike", params: { r: 0, t: 1 } }])
        const retryAfter = Number(denied.headers["retry-after"])
        for (const item of items) expect(retryAfter).toBeGreaterThanOrEqual(item.params["t"] ?? 0)
        expect(retryAfter).toBe(1)
        // a cost no tier can hold: 429, no Retry-After, "don't retry"
        const never = yield* call("other", 6)
        expect(never.status).toBe(429)
        expect(never.headers["retry-after"]).toBeUndefined()
        expect(never.headers["x-sluice-dont-retry"]).toBe("1")
        expect(Protocol.parseRateLimit(never.headers["ratelimit"])).toEqual([
          { name: "spike", params: { r: 5 } }
        ])
      }).pipe(Effect.provide(Layer.mergeAll(QuotaLive, NodeHttpClient.layerUndici)))
  )

  it("errorResponse sends RateLimit-Policy beside RateLimit: its 429 read from the headers alone has the limit", () => {
    const settings = Protocol.make()
    const quota = new Errors.QuotaExceeded({
      tier: "per-key",
      limit: 5,
      remaining: 0,
      retryAfter: Duration.millis(1500)
    })
    for (const error of [quota, new Errors.DontRetry({ reason: "attempts", attempts: 2, cause: quota })]) {
      const response = Middleware.errorResponse(error, settings)
      expect(response.status).toBe(429)
      expect(response.headers["retry-after"]).toBe("2")
      expect(response.headers["ratelimit-policy"]).toBe(`"per-key";q=5`)
      expect(response.headers["ratelimit"]).toBe(`"per-key";r=0;t=2`)
      // what a client that reads only headers makes of it
      const { error: decoded } = ResponseDecoder.verdict(response, 0, settings)
      const read = decoded?._tag === "DontRetry" ? decoded.cause : decoded
      expect(read).toEqual(
        new Errors.QuotaExceeded({ tier: "per-key", limit: 5, remaining: 0, retryAfter: Duration.seconds(2) })
      )
      expect(decoded?._tag).toBe(error._tag)
    }
    // a quota that never resets gives no date: "don't retry", and no `t` in RateLimit
    const never = Middleware.errorResponse(
      new Errors.QuotaExceeded({ tier: "per-key", limit: 5, remaining: 5, retryAfter: Duration.infinity }),
      settings
    )
    expect(never.status).toBe(429)
    expect(never.headers["retry-after"]).toBeUndefined()
    expect(never.headers["x-sluice-dont-retry"]).toBe("1")
    expect(never.headers["ratelimit"]).toBe(`"per-key";r=5`)
  })
})

import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Layer } from "effect"
import { HttpClient, HttpRouter, HttpServerResponse } from "effect/http"
import { Errors } from "@sluice/core"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { Middleware, Protocol, ResponseDecoder } from "@sluice/http"
import { routes, serve } from "./utils.js"

// No QuotaConfig in the app's context: the windows come from the decisions
const QuotaLive = Quota.layer().pipe(
  Layer.provide(QuotaStore.layerMemory()),
  Layer.provide(
    QuotaConfig.layer({
      default: {
        tiers: [
          // 6 per minute with bursts of 5: one more request every 10 s, the bucket refills in
          // 50 s = w. (At 7 per second, six calls on a loaded machine took longer than the
          // 143 ms a request takes to come back, and the sixth was admitted.)
          { name: "spike", algorithm: "gcra", limit: 6, period: "1 minute", burst: 5 },
          { name: "count", algorithm: "sliding-window", limit: 8, period: "1 hour" }
        ]
      }
    })
  )
)

describe("quota headers", () => {
  it.live("RateLimit-Policy always has w; on 429 Retry-After is never earlier than a denying tier's t", () =>
    Effect.gen(function* () {
      const app = yield* routes(HttpRouter.route("GET", "/", Effect.succeed(HttpServerResponse.text("ok"))))
      const base = yield* serve(
        app.pipe(
          Middleware.quota({
            client: (req) => req.headers["x-api-key"],
            cost: (req) => Number(req.headers["x-cost"] ?? "1")
          })
        )
      )
      const client = yield* HttpClient.HttpClient
      const call = (key: string, cost = 1) =>
        client.get(base + "/", { headers: { "x-api-key": key, "x-cost": String(cost) } })
      const started = yield* Clock.currentTimeMillis
      const first = yield* call("acme")
      expect(first.headers["ratelimit-policy"]).toBe(`"spike";q=5;w=50, "count";q=8;w=3600`)
      for (let i = 0; i < 4; i++) expect((yield* call("acme")).status).toBe(200)
      const denied = yield* call("acme")
      const elapsed = (yield* Clock.currentTimeMillis) - started
      expect(denied.status).toBe(429)
      expect(denied.headers["ratelimit-policy"]).toBe(`"spike";q=5;w=50, "count";q=8;w=3600`)
      // only the denying tier, its t the time until the request passes (10 s less the time
      // since the first call), rounded up to whole seconds
      const items = Protocol.parseRateLimit(denied.headers["ratelimit"])
      expect(items.map((i) => i.name)).toEqual(["spike"])
      const t = items[0]!.params["t"]!
      expect(items[0]!.params).toEqual({ r: 0, t })
      expect(t).toBeLessThanOrEqual(10)
      expect(t).toBeGreaterThanOrEqual(Math.ceil((10_000 - elapsed) / 1000))
      const retryAfter = Number(denied.headers["retry-after"])
      expect(retryAfter).toBe(t)
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

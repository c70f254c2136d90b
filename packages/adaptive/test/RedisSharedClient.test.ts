import { describe, expect, it } from "@effect/vitest"
import { Quota, QuotaConfig } from "@sluice/quota"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import * as IoRedis from "@sluice/quota/IoRedis"
import * as QpsSensor from "@sluice/adaptive/QpsSensor"
import * as IoRedisQpsSensor from "@sluice/adaptive/IoRedisQpsSensor"
import { afterAll, beforeAll } from "vitest"
import { Effect, Layer } from "effect"
import { type RedisServer, redisCli, startRedis, stopAll } from "../../quota/test/quota/redisServer.js"

describe("one Redis connection for the quota store, the plan source and the QPS sensor", () => {
  let server: RedisServer
  beforeAll(async () => {
    server = await startRedis()
  })
  afterAll(() => stopAll())

  it.live("IoRedisClient.layer provided once: one connection serves all three", () =>
    Effect.gen(function* () {
      const plan: QuotaConfig.PlanInput = {
        tiers: [{ name: "spike", algorithm: "gcra", limit: 10, period: "1 second" }]
      }
      const live = Layer.mergeAll(
        // about the connection, not the deadline: the first check loads the script, which on a
        // loaded machine can take longer than the default 15 ms
        Quota.layer({ deadline: "1 second" }).pipe(
          Layer.provide(IoRedis.layerStoreShared({ prefix: "shared:" })),
          Layer.provide(IoRedis.layerPlanStoreShared({ default: plan, refresh: "1 hour" }))
        ),
        IoRedisQpsSensor.layerShared({ key: "shared" })
      ).pipe(Layer.provide(IoRedisClient.layer({ url: server.url })))
      yield* Effect.gen(function* () {
        expect((yield* Quota.check("acme")).source).toBe("store")
        const sensor = yield* QpsSensor.QpsSensor
        sensor.recordUnsafe(Date.now(), 3)
        const clients = yield* Effect.promise(() => redisCli(server.port, "CLIENT", "LIST"))
        // the redis-cli asking, and ours
        expect(clients.trim().split("\n").length).toBe(2)
      }).pipe(Effect.provide(live))
    })
  )
})

// The Redis plan store while Redis is down: it keeps the plans in force and says so once per
// outage, not once per refresh.
import { type QuotaConfig, QuotaStore } from "@sluice/quota"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Logger } from "effect"
import { TestClock } from "effect/testing"
import { makeConfigOn, type PlanConnection } from "../src/internal/redisPlanStore.js"

const plan: QuotaConfig.PlanInput = {
  tiers: [{ name: "spike", algorithm: "gcra", limit: 10, period: "1 second" }]
}

describe("Redis plan store: logging while Redis is down", () => {
  it.effect("warns once per outage (not per refresh) and once when Redis answers again", () =>
    Effect.gen(function* () {
      const logs: Array<{ level: string; message: string }> = []
      const logger = Logger.layer([
        Logger.make(({ logLevel, message }) => logs.push({ level: logLevel, message: String(message) }))
      ])
      let down = false
      const failing = <A>(value: A) =>
        Effect.suspend(() =>
          down
            ? Effect.fail(
                new QuotaStore.QuotaStoreError({
                  store: "redis",
                  reason: "unavailable",
                  message: "ECONNREFUSED"
                })
              )
            : Effect.succeed(value)
        )
      const connection: PlanConnection = {
        hgetall: () => failing({}),
        get: () => failing(null),
        set: () => failing(undefined),
        hset: () => failing(undefined),
        hdel: () => failing(undefined)
      }
      const warnings = () => logs.filter((l) => l.level === "Warn" && /cannot read plans/.test(l.message))
      yield* Effect.gen(function* () {
        yield* makeConfigOn(connection, { default: plan, refresh: "1 second" })
        expect(logs).toEqual([])
        down = true
        // 30 refreshes while Redis is down: one warning
        for (let i = 0; i < 30; i++) yield* TestClock.adjust(Duration.seconds(1))
        expect(warnings()).toHaveLength(1)
        down = false
        yield* TestClock.adjust(Duration.seconds(1))
        expect(logs.filter((l) => /plans read from Redis again/.test(l.message))).toHaveLength(1)
        for (let i = 0; i < 5; i++) yield* TestClock.adjust(Duration.seconds(1))
        // a second outage: a second warning
        down = true
        for (let i = 0; i < 10; i++) yield* TestClock.adjust(Duration.seconds(1))
        expect(warnings()).toHaveLength(2)
        expect(logs).toHaveLength(3)
      }).pipe(Effect.scoped, Effect.provide(logger))
    })
  )
})

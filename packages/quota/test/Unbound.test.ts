import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { callAllUnbound } from "../../core/test/unbound.js"

describe("unbound service methods", () => {
  it.effect("Quota, QuotaConfig, QuotaStore", () =>
    Effect.gen(function* () {
      const quota = yield* Quota.Quota
      const config = yield* QuotaConfig.QuotaConfig
      const store = yield* QuotaStore.QuotaStore
      const decisions = yield* Effect.forEach(["a", "b"], quota.get)
      expect(decisions.length).toBe(2)
      expect(yield* Effect.succeed(1).pipe(quota.withQuota("a"))).toBe(1)
      const plan = config.planFor("a")
      yield* callAllUnbound(quota, {
        check: ["a"],
        get: ["a"],
        reward: ["a", 1],
        penalty: ["a", 1],
        block: ["a", "1 millis"],
        reset: ["a"],
        guard: [Effect.void, "a"],
        withQuota: [Effect.void, "a"]
      })
      yield* callAllUnbound(config, {
        planFor: ["a"],
        plan: ["a"],
        setDefault: [{ tiers: [{ name: "t", algorithm: "gcra", limit: 5, period: "1 second" }] }],
        setPlan: ["b", { tiers: [{ name: "t", algorithm: "gcra", limit: 5, period: "1 second" }] }],
        removePlan: ["b"]
      })
      yield* callAllUnbound(store, {
        check: ["a", plan, 1],
        checkUnsafe: ["a", plan, 1],
        adjust: ["a", plan, 1],
        block: ["a", plan, 1],
        reset: ["a"]
      })
    }).pipe(
      Effect.provide(
        Quota.layer().pipe(
          Layer.provideMerge(QuotaStore.layerMemory()),
          Layer.provideMerge(
            QuotaConfig.layer({
              default: { tiers: [{ name: "t", algorithm: "gcra", limit: 5, period: "1 second" }] }
            })
          )
        )
      )
    )
  )
})

import { Options } from "@sluice/core"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Config, ConfigProvider, Effect, Exit, Fiber, Layer, Stream } from "effect"

const withEnv = (env: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

const plan: QuotaConfig.PlanInput = {
  tiers: [{ name: "t", algorithm: "gcra", limit: 5, period: "1 second" }]
}

describe("layerConfig", () => {
  it.effect("Quota.layerConfig, QuotaConfig.layerConfig, QuotaStore.layerMemoryConfig", () =>
    Effect.gen(function* () {
      const layer = Quota.layerConfig(
        Config.all({ mode: Config.literal("fallback", "fail-open", "fail-closed")("MODE") })
      ).pipe(
        Layer.provideMerge(QuotaStore.layerMemoryConfig(Config.all({ maxClients: Config.integer("MAX") }))),
        Layer.provideMerge(QuotaConfig.layerConfig(Config.succeed({ default: plan })))
      )
      const decision = yield* Quota.check("a").pipe(
        Effect.provide(layer),
        withEnv({ MODE: "fail-open", MAX: "10" })
      )
      expect(decision.allowed).toBe(true)
      const bad = yield* Effect.exit(
        Layer.build(layer).pipe(Effect.scoped, withEnv({ MODE: "fail-open", MAX: "-1" }))
      )
      expect(bad).toEqual(Exit.fail(expect.any(Options.InvalidOptions)))
    })
  )
})

describe("Quota events", () => {
  it.scoped("a denial is published on quota.events; an admission is not", () =>
    Effect.gen(function* () {
      const quota = yield* Quota.Quota
      const received = yield* quota.events.pipe(Stream.take(1), Stream.runCollect, Effect.fork)
      yield* Effect.yieldNow()
      yield* Effect.repeatN(quota.check("c"), 5) // limit 5: the 6th is denied
      const events = Chunk.toReadonlyArray(yield* Fiber.join(received))
      expect(events).toEqual([
        expect.objectContaining({ _tag: "Denied", client: "c", tier: "t", source: "store" })
      ])
      expect(events[0]!.retryAfterMs).toBeGreaterThan(0)
    }).pipe(
      Effect.provide(
        Quota.layer().pipe(
          Layer.provideMerge(QuotaStore.layerMemory()),
          Layer.provideMerge(QuotaConfig.layer({ default: plan }))
        )
      )
    )
  )
})

import { Options } from "@sluice/core"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigProvider, Effect, Exit, Fiber, Layer, Stream } from "effect"

const withEnv =
  (env: Record<string, string>) =>
  <A, E, R>(self: Effect.Effect<A, E, R>) =>
    Effect.provideService(self, ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))

const plan: QuotaConfig.PlanInput = {
  tiers: [{ name: "t", algorithm: "gcra", limit: 5, period: "1 second" }]
}

describe("layerConfig", () => {
  it.effect("Quota.layerConfig, QuotaConfig.layerConfig, QuotaStore.layerMemoryConfig", () =>
    Effect.gen(function* () {
      const layer = Quota.layerConfig(
        Config.all({ mode: Config.Literals(["fallback", "fail-open", "fail-closed"], "MODE") })
      ).pipe(
        Layer.provideMerge(QuotaStore.layerMemoryConfig(Config.all({ maxClients: Config.Int("MAX") }))),
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
  it.effect("a denial is published on quota.events; an admission is not", () =>
    Effect.gen(function* () {
      const quota = yield* Quota.Quota
      const received = yield* quota.events.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild)
      yield* Effect.yieldNow
      yield* Effect.repeat(quota.check("c"), { times: 5 }) // limit 5: the 6th is denied
      const events = yield* Fiber.join(received)
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

  it.live("a subscriber more than 256 events behind loses the oldest, not the newest", () =>
    Effect.gen(function* () {
      const quota = yield* Quota.Quota
      const received: Array<string> = []
      // the subscriber takes the first event, then does not read for 300 ms
      const subscriber = yield* quota.events.pipe(
        Stream.runForEach((event) =>
          Effect.andThen(
            Effect.sync(() => received.push(event.client)),
            received.length === 1 ? Effect.sleep("300 millis") : Effect.void
          )
        ),
        Effect.forkChild
      )
      yield* Effect.sleep("20 millis")
      // 300 denials meanwhile (limit 1: each client's second check)
      for (let i = 0; i < 300; i++) {
        yield* quota.check(`c${i}`)
        yield* quota.check(`c${i}`)
      }
      yield* Effect.sleep("600 millis")
      yield* Fiber.interrupt(subscriber)
      // events were lost (the buffer holds 256), in order, and the newest is among those kept
      const numbers = received.map((client) => Number(client.slice(1)))
      expect(numbers.length).toBeLessThan(300)
      expect(numbers).toEqual([...numbers].sort((a, b) => a - b))
      expect(numbers.at(-1)).toBe(299)
    }).pipe(
      Effect.provide(
        Quota.layer().pipe(
          Layer.provideMerge(QuotaStore.layerMemory()),
          Layer.provideMerge(
            QuotaConfig.layer({
              default: { tiers: [{ name: "t", algorithm: "gcra", limit: 1, period: "1 hour" }] }
            })
          )
        )
      )
    )
  )
})

import { it } from "@effect/vitest"
import {
  AdaptiveThrottle,
  AimdInterval,
  ConcurrencyLimiter,
  LoadShedder,
  ProportionalSampler,
  QpsSensor,
  ThresholdMonitor
} from "@sluice/adaptive"
import { Config, ConfigProvider, Effect, Either, Layer } from "effect"
import { describe, expect } from "vitest"

const withEnv = (env: Record<string, string>) =>
  Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("layerConfig", () => {
  it.scoped("reads every service's options from Config", () =>
    Effect.gen(function* () {
      const live = Layer.mergeAll(
        AdaptiveThrottle.layerConfig(Config.all({ k: Config.number("K") })),
        ConcurrencyLimiter.layerConfig(Config.all({ maxQueue: Config.integer("Q") })),
        LoadShedder.layerConfig(Config.all({ capacity: Config.number("CAP") })),
        AimdInterval.layerConfig(
          Config.all({
            min: Config.duration("MIN"),
            max: Config.duration("MAX"),
            step: Config.duration("MIN")
          })
        ),
        ThresholdMonitor.layerConfig(Config.all({ instances: Config.integer("N") })),
        ProportionalSampler.layerConfig(Config.all({ goal: Config.number("GOAL") })).pipe(
          Layer.provide(QpsSensor.layerConfig(Config.all({ window: Config.integer("W") })))
        )
      ).pipe(
        Layer.provide(
          withEnv({ K: "3", Q: "5", CAP: "10", MIN: "1 second", MAX: "1 minute", N: "2", GOAL: "50", W: "2" })
        )
      )
      const ctx = yield* Layer.build(live)
      expect(ctx.unsafeMap.size).toBe(6)
    })
  )

  it.scoped("a bad value is InvalidOptions, a missing one ConfigError", () =>
    Effect.gen(function* () {
      const bad = yield* Layer.build(
        AdaptiveThrottle.layerConfig(Config.all({ k: Config.number("K") })).pipe(
          Layer.provide(withEnv({ K: "0.5" }))
        )
      ).pipe(Effect.either)
      expect(Either.isLeft(bad) && bad.left._tag).toBe("InvalidOptions")
      const missing = yield* Layer.build(
        LoadShedder.layerConfig(Config.all({ capacity: Config.number("CAP") })).pipe(
          Layer.provide(withEnv({}))
        )
      ).pipe(Effect.either)
      expect(Either.isLeft(missing) && missing.left._tag).not.toBe("InvalidOptions")
    })
  )
})

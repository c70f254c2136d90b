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
import { Config, ConfigProvider, Effect, Layer, Result } from "effect"
import { describe, expect } from "vitest"

const withEnv = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromUnknown(env))

describe("layerConfig", () => {
  it.effect("reads every service's options from Config", () =>
    Effect.gen(function* () {
      const live = Layer.mergeAll(
        AdaptiveThrottle.layerConfig(Config.all({ k: Config.Number("K") })),
        ConcurrencyLimiter.layerConfig(Config.all({ maxQueue: Config.Int("Q") })),
        LoadShedder.layerConfig(Config.all({ capacity: Config.Number("CAP") })),
        AimdInterval.layerConfig(
          Config.all({
            min: Config.Duration("MIN"),
            max: Config.Duration("MAX"),
            step: Config.Duration("MIN")
          })
        ),
        ThresholdMonitor.layerConfig(Config.all({ instances: Config.Int("N") })),
        ProportionalSampler.layerConfig(Config.all({ goal: Config.Number("GOAL") })).pipe(
          Layer.provide(QpsSensor.layerConfig(Config.all({ window: Config.Int("W") })))
        )
      ).pipe(
        Layer.provide(
          withEnv({ K: "3", Q: "5", CAP: "10", MIN: "1 second", MAX: "1 minute", N: "2", GOAL: "50", W: "2" })
        )
      )
      const ctx = yield* Layer.build(live)
      // Effect 4's `Layer.build` also puts its memo map in the context it returns: count the services.
      expect([...ctx.mapUnsafe.keys()].filter((key) => key.startsWith("@sluice/adaptive/"))).toHaveLength(6)
    })
  )

  it.effect("a bad value is InvalidOptions, a missing one ConfigError", () =>
    Effect.gen(function* () {
      const bad = yield* Layer.build(
        AdaptiveThrottle.layerConfig(Config.all({ k: Config.Number("K") })).pipe(
          Layer.provide(withEnv({ K: "0.5" }))
        )
      ).pipe(Effect.result)
      expect(Result.isFailure(bad) && bad.failure._tag).toBe("InvalidOptions")
      const missing = yield* Layer.build(
        LoadShedder.layerConfig(Config.all({ capacity: Config.Number("CAP") })).pipe(
          Layer.provide(withEnv({}))
        )
      ).pipe(Effect.result)
      expect(Result.isFailure(missing) && missing.failure._tag).not.toBe("InvalidOptions")
    })
  )
})

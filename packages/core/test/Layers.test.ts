import { CircuitBreaker, Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigProvider, Effect, Exit, Layer } from "effect"

const withEnv = (env: Record<string, string>) =>
  Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env))

describe("layerConfig", () => {
  it.effect("CircuitBreaker.layerConfig reads options from Config, under the default or a keyed tag", () =>
    Effect.gen(function* () {
      class Db extends CircuitBreaker.Tag("db")<Db>() {}
      const config = Config.all({ name: Config.String("NAME"), consecutiveFailures: Config.Int("FAILS") })
      const names = yield* Effect.all([CircuitBreaker.CircuitBreaker, Db]).pipe(
        Effect.map((bs) => bs.map((b) => b.name)),
        Effect.provide(
          Layer.merge(CircuitBreaker.layerConfig(config), CircuitBreaker.layerConfig(config, Db))
        ),
        withEnv({ NAME: "db", FAILS: "2" })
      )
      expect(names).toEqual(["db", "db"])
      const bad = yield* Effect.exit(
        Layer.build(CircuitBreaker.layerConfig(config)).pipe(
          Effect.scoped,
          withEnv({ NAME: "db", FAILS: "0" })
        )
      )
      expect(bad).toEqual(Exit.fail(expect.any(Options.InvalidOptions)))
      const missing = yield* Effect.exit(
        Layer.build(CircuitBreaker.layerConfig(config)).pipe(Effect.scoped, withEnv({}))
      )
      expect(Exit.isFailure(missing)).toBe(true)
    })
  )
})

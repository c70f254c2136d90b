import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import type { Errors, Options } from "@sluice/core"
import { SluiceHttpClient } from "@sluice/http"
import { RetryBudget } from "@sluice/retry"
import { Config, ConfigProvider, Effect, Exit, Layer, Result } from "effect"
import type { HttpClient, HttpClientError, HttpClientResponse } from "effect/http"

const PoliciesLive = Layer.mergeAll(RetryBudget.layer(), AdaptiveThrottle.layer(), ConcurrencyLimiter.layer())

describe("SluiceHttpClient types", () => {
  it("the client's errors: retryable ones are gone, DontRetry and Throttled are in", () => {
    type Get = ReturnType<SluiceHttpClient.Client["get"]>
    expectTypeOf<Effect.Success<Get>>().toEqualTypeOf<HttpClientResponse.HttpClientResponse>()
    expectTypeOf<Effect.Error<Get>>().toEqualTypeOf<
      HttpClientError.HttpClientError | Errors.Throttled | Errors.DontRetry
    >()
    // nothing above may retry what the client hands out: no Overloaded, no QuotaExceeded
    expectTypeOf<Extract<Effect.Error<Get>, Errors.Overloaded | Errors.QuotaExceeded>>().toBeNever()
  })

  it("layer takes its policies from context; layerDefault only the platform client", () => {
    type Policies =
      | HttpClient.HttpClient
      | RetryBudget.RetryBudget
      | AdaptiveThrottle.AdaptiveThrottle
      | ConcurrencyLimiter.ConcurrencyLimiter
    expectTypeOf(SluiceHttpClient.layer({ maxAttempts: 3 })).toEqualTypeOf<
      Layer.Layer<SluiceHttpClient.SluiceHttpClient, Options.InvalidOptions, Policies>
    >()
    expectTypeOf(SluiceHttpClient.layerConfig(Config.all({ maxAttempts: Config.Int("N") }))).toEqualTypeOf<
      Layer.Layer<SluiceHttpClient.SluiceHttpClient, Options.InvalidOptions | Config.ConfigError, Policies>
    >()
    expectTypeOf(SluiceHttpClient.layerDefault({ limiter: false })).toEqualTypeOf<
      Layer.Layer<SluiceHttpClient.SluiceHttpClient, Options.InvalidOptions, HttpClient.HttpClient>
    >()
    expectTypeOf(SluiceHttpClient.make()).toEqualTypeOf<
      Effect.Effect<SluiceHttpClient.Client, Options.InvalidOptions, Policies>
    >()
    expectTypeOf(SluiceHttpClient.makeDefault()).toEqualTypeOf<
      Effect.Effect<SluiceHttpClient.Client, Options.InvalidOptions, HttpClient.HttpClient>
    >()
    // the policies' own options belong to layerDefault, not to layer
    // @ts-expect-error: `limiter` is not a per-client option
    SluiceHttpClient.layer({ limiter: { maxQueue: 0 } })
    // @ts-expect-error: nor is `budget`
    SluiceHttpClient.make({ budget: { ratio: 0.1 } })
  })

  it.effect("layerConfig reads options from Config and names a bad field", () =>
    Effect.gen(function* () {
      const config = Config.all({ maxAttempts: Config.Int("MAX_ATTEMPTS") })
      const layer = SluiceHttpClient.layerConfig(config).pipe(
        Layer.provide(Layer.merge(NodeHttpClient.layerUndici, PoliciesLive))
      )
      const build = (values: Record<string, string>) =>
        Effect.result(
          Effect.scoped(Layer.build(layer)).pipe(
            Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown(values))
          )
        )
      const ok = yield* build({ MAX_ATTEMPTS: "2" })
      expect(Result.isSuccess(ok)).toBe(true)
      const bad = yield* build({ MAX_ATTEMPTS: "0" })
      expect(Result.isFailure(bad) && String(bad.failure)).toContain("maxAttempts")
      const missing = yield* build({})
      // Effect 4 has no `ConfigError.isMissingDataOnly`: the data is missing exactly when
      // `Config.withDefault` recovers, and the layer fails with the error the Config reads then.
      const absent = ConfigProvider.fromUnknown({})
      const missingOnly =
        Exit.isSuccess(
          yield* Effect.exit(config.pipe(Config.withDefault({ maxAttempts: 1 })).parse(absent))
        ) && (yield* Effect.flip(config.parse(absent))).message
      expect(
        Result.isFailure(missing) &&
          missing.failure instanceof Config.ConfigError &&
          missing.failure.message === missingOnly
      ).toBe(true)
    })
  )
})

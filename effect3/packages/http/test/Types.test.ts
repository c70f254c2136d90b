import type { HttpClient, HttpClientError, HttpClientResponse } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import type { Errors, Options } from "@sluice/core"
import { SluiceHttpClient } from "@sluice/http"
import { RetryBudget } from "@sluice/retry"
import { Config, ConfigError, ConfigProvider, Effect, Either, Layer } from "effect"

const PoliciesLive = Layer.mergeAll(RetryBudget.layer(), AdaptiveThrottle.layer(), ConcurrencyLimiter.layer())

describe("SluiceHttpClient types", () => {
  it("the client's errors: retryable ones are gone, DontRetry and Throttled are in", () => {
    type Get = ReturnType<SluiceHttpClient.Client["get"]>
    expectTypeOf<Effect.Effect.Success<Get>>().toEqualTypeOf<HttpClientResponse.HttpClientResponse>()
    expectTypeOf<Effect.Effect.Error<Get>>().toEqualTypeOf<
      HttpClientError.HttpClientError | Errors.Throttled | Errors.DontRetry
    >()
    // nothing above may retry what the client hands out: no Overloaded, no QuotaExceeded
    expectTypeOf<Extract<Effect.Effect.Error<Get>, Errors.Overloaded | Errors.QuotaExceeded>>().toBeNever()
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
    expectTypeOf(
      SluiceHttpClient.layerConfig(Config.all({ maxAttempts: Config.integer("N") }))
    ).toEqualTypeOf<
      Layer.Layer<
        SluiceHttpClient.SluiceHttpClient,
        Options.InvalidOptions | ConfigError.ConfigError,
        Policies
      >
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
      const layer = SluiceHttpClient.layerConfig(
        Config.all({ maxAttempts: Config.integer("MAX_ATTEMPTS") })
      ).pipe(Layer.provide(Layer.merge(NodeHttpClient.layerUndici, PoliciesLive)))
      const ok = yield* Effect.either(
        Effect.scoped(Layer.build(layer)).pipe(
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["MAX_ATTEMPTS", "2"]])))
        )
      )
      expect(Either.isRight(ok)).toBe(true)
      const bad = yield* Effect.either(
        Effect.scoped(Layer.build(layer)).pipe(
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["MAX_ATTEMPTS", "0"]])))
        )
      )
      expect(Either.isLeft(bad) && String(bad.left)).toContain("maxAttempts")
      const missing = yield* Effect.either(
        Effect.scoped(Layer.build(layer)).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))
      )
      expect(
        Either.isLeft(missing) &&
          ConfigError.isConfigError(missing.left) &&
          ConfigError.isMissingDataOnly(missing.left)
      ).toBe(true)
    })
  )
})

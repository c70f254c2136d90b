import type { HttpClientError, HttpClientResponse } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import type { Errors } from "@sluice/core"
import { SluiceHttpClient } from "@sluice/http"
import { Config, ConfigProvider, Effect, Either, Layer } from "effect"

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

  it.effect("layerConfig reads options from Config and names a bad field", () =>
    Effect.gen(function* () {
      const layer = SluiceHttpClient.layerConfig(
        Config.all({ maxAttempts: Config.integer("MAX_ATTEMPTS") })
      ).pipe(Layer.provide(NodeHttpClient.layerUndici))
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
    })
  )
})

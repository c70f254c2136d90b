// The README's two snippets, verbatim except for the port (0: picked by the OS), the URL and the
// secret (from a provider of its own, not the environment).
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { AdaptiveThrottle, ConcurrencyLimiter, LoadShedder } from "@sluice/adaptive"
import { Criticality } from "@sluice/core"
import { Middleware, SluiceHttpClient, ThrottleSignal, Trust } from "@sluice/http"
import { RetryBudget, RetryHistogram } from "@sluice/retry"
import { Config, ConfigProvider, Context, Duration, Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { ClientOptionsSchema } from "../src/internal/client.js"

describe("README", () => {
  it.live("a client Layer and a router with middleware", () =>
    Effect.gen(function* () {
      const SluiceLive = Effect.gen(function* () {
        // Our own tiers send `x-sluice-trust: <secret>`; everyone else is clamped to SHEDDABLE_PLUS
        // (so a flood from outside never competes with our own CRITICAL work) and their attempt
        // numbers are recorded apart, deciding nothing.
        const trust = yield* Trust.sharedSecret({ secret: yield* Config.Redacted("SLUICE_TRUST_SECRET") })
        return HttpRouter.middleware(
          (app) =>
            app.pipe(
              Middleware.loadShed(), // at most `capacity` at once, a short wait by criticality, 503 + Retry-After
              Middleware.retryGuard(), // don't-retry while (trusted) retries dominate
              Middleware.mapErrors, // Sluice errors of handlers → 429 / 503 (+ don't-retry)
              Middleware.criticality({ trust, ceiling: "SHEDDABLE_PLUS" })
            ),
          { global: true }
        )
      }).pipe(Layer.unwrap)

      const ServerLive = HttpRouter.serve(
        Layer.mergeAll(HttpRouter.add("GET", "/items", HttpServerResponse.text("[]")), SluiceLive)
      ).pipe(
        Layer.provide(Layer.merge(LoadShedder.layer({ capacity: 200 }), RetryHistogram.layer())),
        Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0 })),
        Layer.provide(
          ConfigProvider.layer(
            ConfigProvider.fromUnknown({ SLUICE_TRUST_SECRET: "a secret only our own tiers know" })
          )
        )
      )
      const context = yield* Layer.build(ServerLive)
      const port = new URL(HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)).port

      // The app's own policies: the client uses these instances, and so can the rest of the app.
      const PoliciesLive = Layer.mergeAll(
        RetryBudget.layer(),
        AdaptiveThrottle.layer(),
        ConcurrencyLimiter.layer()
      )

      const ClientLive = SluiceHttpClient.layer({
        maxAttempts: 3,
        timeout: "2 seconds",
        maxRetryAfter: "10 seconds"
      }).pipe(
        Layer.provideMerge(ThrottleSignal.layer()),
        Layer.provideMerge(PoliciesLive),
        Layer.provide(NodeHttpClient.layerUndici)
      )

      const items = Effect.flatMap(SluiceHttpClient.SluiceHttpClient, (client) =>
        client.get(`http://127.0.0.1:${port}/items`)
      )
      const program = items.pipe(Criticality.withCriticality("SHEDDABLE"), Effect.provide(ClientLive))
      const response = yield* program
      expect(response.status).toBe(200)
      expect(yield* response.text).toBe("[]")
    })
  )
})

describe("README option table", () => {
  it.effect("states the client's own defaults for maxRetryAfter and errorBodyTimeout", () =>
    Effect.gen(function* () {
      const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")
      const row = (option: string) =>
        new RegExp(`^\\| \`${option}\` \\| ([^|]+) \\|`, "m").exec(readme)?.[1]?.trim()
      const defaults = yield* Schema.decodeUnknownEffect(ClientOptionsSchema)({})
      const seconds = (d: Duration.Duration) => `${Duration.toSeconds(d)} s`
      expect(row("maxRetryAfter")).toBe(seconds(defaults.maxRetryAfter))
      expect(row("errorBodyTimeout")).toBe(seconds(defaults.errorBodyTimeout))
    })
  )
})

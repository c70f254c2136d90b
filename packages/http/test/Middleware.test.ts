import { HttpClient, HttpClientRequest, HttpRouter, HttpServerResponse } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either } from "effect"
import { Criticality, Errors } from "@sluice/core"
import { Middleware, Protocol, ResponseDecoder } from "@sluice/http"
import { serve } from "./utils.js"

const settings = Protocol.make()

describe("Middleware (over a real NodeHttpServer)", () => {
  it.scopedLive("criticality: sets the FiberRef, clamps untrusted callers", () =>
    Effect.gen(function* () {
      const app = HttpRouter.empty.pipe(
        HttpRouter.get(
          "/",
          Effect.map(Criticality.current, (level) => HttpServerResponse.text(level))
        ),
        Middleware.criticality({
          trust: (req) => req.headers["x-trusted"] === "yes",
          ceiling: "SHEDDABLE_PLUS"
        })
      )
      const base = yield* serve(app)
      const client = yield* HttpClient.HttpClient
      const level = (headers: Record<string, string>) =>
        client.get(base + "/", { headers }).pipe(Effect.flatMap((r) => r.text))
      expect(yield* level({})).toBe("SHEDDABLE_PLUS")
      expect(yield* level({ "x-sluice-criticality": "CRITICAL_PLUS" })).toBe("SHEDDABLE_PLUS")
      expect(yield* level({ "x-sluice-criticality": "SHEDDABLE" })).toBe("SHEDDABLE")
      expect(yield* level({ "x-sluice-criticality": "CRITICAL_PLUS", "x-trusted": "yes" })).toBe(
        "CRITICAL_PLUS"
      )
      expect(yield* level({ "x-sluice-criticality": "garbage", "x-trusted": "yes" })).toBe("CRITICAL")
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )

  it.scopedLive("mapErrors: every Sluice error becomes its wire response and decodes back", () =>
    Effect.gen(function* () {
      const errors: Record<string, Errors.SluiceError> = {
        overloaded: new Errors.Overloaded({ reason: "busy", retryAfter: Duration.seconds(2) }),
        quota: new Errors.QuotaExceeded({
          tier: "spike",
          limit: 20,
          remaining: 0,
          retryAfter: Duration.seconds(3)
        }),
        dontretry: new Errors.DontRetry({ reason: "attempts", attempts: 3 }),
        throttled: new Errors.Throttled({ key: "backend" }),
        circuit: new Errors.CircuitOpen({ name: "db", halfOpenAt: 0, retryAfter: Duration.seconds(4) })
      }
      const app = HttpRouter.empty.pipe(
        HttpRouter.get(
          "/:name",
          Effect.flatMap(HttpRouter.params, (p) => Effect.fail(errors[p.name!]!))
        ),
        Middleware.mapErrors
      )
      const base = yield* serve(app)
      const client = yield* HttpClient.HttpClient
      const decode = (name: string) =>
        client.execute(HttpClientRequest.get(`${base}/${name}`)).pipe(
          Effect.flatMap((r) => ResponseDecoder.decode(r, settings, false)),
          Effect.either
        )
      const overloaded = yield* decode("overloaded")
      expect(overloaded).toEqual(
        Either.left(new Errors.Overloaded({ reason: "server", retryAfter: Duration.seconds(2) }))
      )
      const quota = yield* decode("quota")
      expect(quota).toEqual(
        Either.left(
          new Errors.QuotaExceeded({ tier: "spike", limit: 0, remaining: 0, retryAfter: Duration.seconds(3) })
        )
      )
      for (const name of ["dontretry", "throttled"]) {
        const r = yield* decode(name)
        expect(Either.isLeft(r) && r.left._tag).toBe("DontRetry")
      }
      const circuit = yield* decode("circuit")
      expect(circuit).toEqual(
        Either.left(new Errors.Overloaded({ reason: "server", retryAfter: Duration.seconds(4) }))
      )
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )
})

import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Result } from "effect"
import { HttpClient, HttpClientRequest, HttpRouter, HttpServerResponse } from "effect/http"
import { Criticality, Errors } from "@sluice/core"
import { Middleware, Protocol, ResponseDecoder } from "@sluice/http"
import { routes, serve } from "./utils.js"

const settings = Protocol.make()

describe("Middleware (over a real NodeHttpServer)", () => {
  it.live("criticality: sets the Reference, clamps untrusted callers", () =>
    Effect.gen(function* () {
      const app = yield* routes(
        HttpRouter.route(
          "GET",
          "/",
          Effect.map(Criticality.current, (level) => HttpServerResponse.text(level))
        )
      )
      const base = yield* serve(
        app.pipe(
          Middleware.criticality({
            trust: (req) => req.headers["x-trusted"] === "yes",
            ceiling: "SHEDDABLE_PLUS"
          })
        )
      )
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

  it("errorResponse: a quota hint of 0, negative or NaN is never `Retry-After: 0` nor a negative hint in the body", () => {
    for (const millis of [0, -1500, NaN]) {
      const error = new Errors.QuotaExceeded({
        tier: "spike",
        limit: 5,
        remaining: 0,
        retryAfter: Duration.millis(millis)
      })
      const response = Middleware.errorResponse(error, Protocol.make())
      expect(response.status).toBe(429)
      expect(response.headers["retry-after"]).toBe("1")
      const body = response.body._tag === "Uint8Array" ? new TextDecoder().decode(response.body.body) : ""
      expect(JSON.parse(body)).toMatchObject({ error: { _tag: "QuotaExceeded", retryAfterMs: 0 } })
    }
  })

  it.live("mapErrors: every Sluice error becomes its wire response and decodes back", () =>
    Effect.gen(function* () {
      const quota = new Errors.QuotaExceeded({
        tier: "spike",
        limit: 20,
        remaining: 0,
        retryAfter: Duration.seconds(3)
      })
      const busy = new Errors.Overloaded({ reason: "db busy", retryAfter: Duration.millis(1500) })
      const errors: Record<string, Errors.SluiceError> = {
        overloaded: new Errors.Overloaded({ reason: "busy", retryAfter: Duration.seconds(2) }),
        quota,
        dontretry: new Errors.DontRetry({ reason: "attempts", attempts: 3 }),
        "dontretry-overloaded": new Errors.DontRetry({ reason: "attempts", attempts: 3, cause: busy }),
        "dontretry-quota": new Errors.DontRetry({ reason: "not-retryable", attempts: 1, cause: quota }),
        throttled: new Errors.Throttled({ key: "backend" }),
        circuit: new Errors.CircuitOpen({ name: "db", halfOpenAt: 0, retryAfter: Duration.seconds(4) })
      }
      const app = yield* routes(
        HttpRouter.route(
          "GET",
          "/:name",
          Effect.flatMap(HttpRouter.params, (p) => Effect.fail(errors[p.name!]!))
        )
      )
      const base = yield* serve(app.pipe(Middleware.mapErrors))
      const client = yield* HttpClient.HttpClient
      const get = (name: string) => client.execute(HttpClientRequest.get(`${base}/${name}`))
      const decode = (name: string) =>
        get(name).pipe(
          Effect.flatMap((r) => ResponseDecoder.decode(r, settings, false)),
          Effect.result
        )
      // Sluice's own errors come back as they were sent: reason, hint, quota fields.
      expect(yield* decode("overloaded")).toEqual(Result.fail(errors.overloaded))
      expect(yield* decode("quota")).toEqual(Result.fail(quota))
      expect(yield* decode("dontretry-overloaded")).toEqual(Result.fail(errors["dontretry-overloaded"]))
      expect(yield* decode("dontretry-quota")).toEqual(Result.fail(errors["dontretry-quota"]))
      // A DontRetry that names no cause keeps the one its status says (a 503: the server refused).
      expect(yield* decode("dontretry")).toEqual(
        Result.fail(
          new Errors.DontRetry({
            reason: "attempts",
            attempts: 3,
            cause: new Errors.Overloaded({ reason: "server" })
          })
        )
      )
      // The server's own throttle and breaker are, to its caller, the server refusing the work.
      expect(yield* decode("throttled")).toEqual(
        Result.fail(
          new Errors.DontRetry({
            reason: "server",
            cause: new Errors.Overloaded({ reason: "throttled: backend" })
          })
        )
      )
      expect(yield* decode("circuit")).toEqual(
        Result.fail(new Errors.Overloaded({ reason: "circuit open: db", retryAfter: Duration.seconds(4) }))
      )
      // What a DontRetry gave up on keeps its status and hint on the wire.
      const quotaBelow = yield* get("dontretry-quota")
      expect(quotaBelow.status).toBe(429)
      expect(quotaBelow.headers["retry-after"]).toBe("3")
      expect(quotaBelow.headers["x-sluice-dont-retry"]).toBe("1")
      expect(quotaBelow.headers["ratelimit-policy"]).toBe(`"spike";q=20`)
      expect(quotaBelow.headers["ratelimit"]).toBe(`"spike";r=0;t=3`)
      const busyBelow = yield* get("dontretry-overloaded")
      expect(busyBelow.status).toBe(503)
      expect(busyBelow.headers["retry-after"]).toBe("2")
      expect(busyBelow.headers["x-sluice-dont-retry"]).toBe("1")
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )
})

/**
 * The caller's deadline on the wire: `SluiceHttpClient` sends the time left of its call's
 * deadline as `x-sluice-deadline-ms`; `Middleware.criticality` reads it into
 * `Retry.currentDeadline` (believed from trusted callers, clamped for others, less a margin)
 * and answers a request whose caller has already given up without running its handler.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Middleware, SluiceHttpClient, Trust } from "@sluice/http"
import { Retry } from "@sluice/retry"
import { Clock, Effect, Layer } from "effect"
import { HttpClient, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { routes, serve } from "./utils.js"

/** A server whose handler answers what it was told: the header, and the deadline it lives under. */
const echo = (options: Middleware.CriticalityOptions) =>
  Effect.gen(function* () {
    let handled = 0
    const app = yield* routes(
      HttpRouter.route(
        "GET",
        "/",
        Effect.gen(function* () {
          handled++
          const request = yield* HttpServerRequest.HttpServerRequest
          const deadline = yield* Retry.currentDeadline
          const now = yield* Clock.currentTimeMillis
          return yield* HttpServerResponse.json({
            header: request.headers["x-sluice-deadline-ms"] ?? null,
            left: deadline === Infinity ? null : deadline - now
          })
        })
      )
    )
    const base = yield* serve(app.pipe(Middleware.mapErrors, Middleware.criticality(options)))
    return { base, handled: () => handled }
  })

const get = (url: string, headers: Record<string, string> = {}) =>
  Effect.flatMap(HttpClient.HttpClient, (client) => client.get(url, { headers }))

const body = (response: { readonly json: Effect.Effect<unknown, unknown> }) =>
  Effect.map(Effect.orDie(response.json), (json) => json as { header: string | null; left: number | null })

describe("deadlines on the wire", () => {
  it.live("a trusted caller's deadline is believed, less the margin", () =>
    Effect.gen(function* () {
      const { base } = yield* echo({ trust: Trust.everyone })
      const { left } = yield* body(yield* get(base, { "x-sluice-deadline-ms": "60000" }))
      expect(left).not.toBeNull()
      expect(left!).toBeLessThanOrEqual(60_000 - 5)
      expect(left!).toBeGreaterThan(50_000)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )

  it.live("an untrusted caller's is clamped to maxUntrusted; no header is no deadline", () =>
    Effect.gen(function* () {
      const { base } = yield* echo({ deadline: { maxUntrusted: "2 seconds", margin: "10 millis" } })
      const clamped = yield* body(yield* get(base, { "x-sluice-deadline-ms": "60000" }))
      expect(clamped.left!).toBeLessThanOrEqual(2000 - 10)
      expect(clamped.left!).toBeGreaterThan(0)
      // shorter is always believed
      const shorter = yield* body(yield* get(base, { "x-sluice-deadline-ms": "500" }))
      expect(shorter.left!).toBeLessThanOrEqual(490)
      expect((yield* body(yield* get(base))).left).toBeNull()
      // malformed values are no deadline, never an error
      for (const bad of ["-1", "1e9", "soon", "1.5"])
        expect((yield* body(yield* get(base, { "x-sluice-deadline-ms": bad }))).left).toBeNull()
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )

  it.live("a caller that has already given up gets 503 + don't-retry, and the handler never runs", () =>
    Effect.gen(function* () {
      const { base, handled } = yield* echo({ trust: Trust.everyone })
      for (const left of ["0", "3"]) {
        const response = yield* get(base, { "x-sluice-deadline-ms": left })
        expect(response.status).toBe(503)
        expect(response.headers["x-sluice-dont-retry"]).toBe("1")
      }
      expect(handled()).toBe(0)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )

  it.live("deadline: false ignores the header", () =>
    Effect.gen(function* () {
      const { base, handled } = yield* echo({ trust: Trust.everyone, deadline: false })
      const { left } = yield* body(yield* get(base, { "x-sluice-deadline-ms": "0" }))
      expect(left).toBeNull()
      expect(handled()).toBe(1)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )

  it.live("a SluiceHttpClient call sends what is left of its timeout, and of an enclosing deadline", () =>
    Effect.gen(function* () {
      const { base } = yield* echo({})
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const withTimeout = yield* body(yield* client.get(base))
      expect(Number(withTimeout.header)).toBeGreaterThan(0)
      expect(Number(withTimeout.header)).toBeLessThanOrEqual(2000)
      // under an earlier enclosing deadline (a handler's, read from its own request)
      const now = yield* Clock.currentTimeMillis
      const enclosed = yield* body(
        yield* client.get(base).pipe(Effect.provideService(Retry.currentDeadline, now + 700))
      )
      expect(Number(enclosed.header)).toBeLessThanOrEqual(700)
      // an enclosing deadline already spent sends nothing
      const spent = yield* Effect.flip(
        client.get(base).pipe(Effect.provideService(Retry.currentDeadline, now - 1))
      )
      expect(spent._tag).toBe("DontRetry")
    }).pipe(
      Effect.provide(
        SluiceHttpClient.layerDefault({ timeout: "2 seconds" }).pipe(
          Layer.provide(NodeHttpClient.layerUndici)
        )
      )
    )
  )

  it.live("without a timeout, a client call sends nothing and lives under no deadline", () =>
    Effect.gen(function* () {
      const { base } = yield* echo({})
      const client = yield* SluiceHttpClient.SluiceHttpClient
      expect((yield* body(yield* client.get(base))).header).toBeNull()
    }).pipe(Effect.provide(SluiceHttpClient.layerDefault({}).pipe(Layer.provide(NodeHttpClient.layerUndici))))
  )
})

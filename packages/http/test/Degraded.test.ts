/**
 * A degraded answer on the wire: a server marks a cheaper answer given under overload with
 * `x-sluice-degraded: 1`; the client returns it as the success it is and counts it by host
 * (`sluice_http_client_degraded_total`), and `Protocol.isDegraded` tells a caller which it got.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Protocol, SluiceHttpClient } from "@sluice/http"
import { Effect, Layer, Metric } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { routes, serve } from "./utils.js"

const degradedCount = Effect.map(Metric.snapshot, (snapshots) =>
  snapshots
    .filter((s) => s.id === "sluice_http_client_degraded")
    .reduce((sum, s) => sum + Number((s.state as { count: number }).count), 0)
)

describe("degraded answers", () => {
  it("Protocol.isDegraded reads the flag, under renamed headers too", () => {
    expect(Protocol.isDegraded({ "x-sluice-degraded": "1" })).toBe(true)
    expect(Protocol.isDegraded({ "x-sluice-degraded": "0" })).toBe(false)
    expect(Protocol.isDegraded({})).toBe(false)
    const names = Protocol.make({ headers: { degraded: "X-Acme-Partial" } }).headers
    expect(Protocol.isDegraded({ "x-acme-partial": "yes" }, names)).toBe(true)
  })

  it.live("the client returns a degraded answer as a success and counts it", () =>
    Effect.gen(function* () {
      const app = yield* routes(
        HttpRouter.route("GET", "/full", HttpServerResponse.text("full")),
        HttpRouter.route(
          "GET",
          "/partial",
          Effect.succeed(HttpServerResponse.text("partial", { headers: { "x-sluice-degraded": "1" } }))
        )
      )
      const base = yield* serve(app)
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const before = yield* degradedCount
      const full = yield* client.get(`${base}/full`)
      const partial = yield* client.get(`${base}/partial`)
      expect([full.status, partial.status]).toEqual([200, 200])
      expect(Protocol.isDegraded(full.headers)).toBe(false)
      expect(Protocol.isDegraded(partial.headers)).toBe(true)
      expect((yield* degradedCount) - before).toBe(1)
    }).pipe(Effect.provide(SluiceHttpClient.layerDefault({}).pipe(Layer.provide(NodeHttpClient.layerUndici))))
  )
})

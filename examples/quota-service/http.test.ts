import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runHttp } from "./http.js"

describe("examples/quota-service over real HTTP (smoke, real Redis)", () => {
  it.live("instances share each client's quota through Redis; 429s carry the IETF headers", () =>
    Effect.gen(function* () {
      const r = yield* runHttp({ instances: 3, seconds: 2, minRequests: 120 })
      for (const c of r.clients) {
        expect(c.admitted).toBeGreaterThan(0)
        expect(c.admitted).toBeLessThanOrEqual(c.allowedAtMost)
        // every instance admitted some: the quota is one across them, not one per instance
        expect(c.perInstance.every((n) => n > 0)).toBe(true)
      }
      const acme = r.clients.find((c) => c.client === "acme")!
      const globex = r.clients.find((c) => c.client === "globex")!
      // gcra: q is the bucket (burst) and w the time to refill it (100 / 50 per second = 2 s)
      expect(acme.policy).toBe(`"spike";q=100;w=2, "count";q=150;w=60`)
      expect(globex.policy).toBe(`"spike";q=40;w=2, "count";q=60;w=60`)
      expect(globex.denied).toBeGreaterThan(0)
      expect(globex.maxRetryAfter).toBeGreaterThan(0)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )
})

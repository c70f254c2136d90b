import type { TierDecision } from "@sluice/kernel/quota/QuotaPlan"
import * as Headers from "@sluice/kernel/wire/Headers"
import * as QuotaHeaders from "@sluice/kernel/wire/QuotaHeaders"
import * as RateLimit from "@sluice/kernel/wire/RateLimit"
import { describe, expect, it } from "vitest"

const names = Headers.defaultHeaderNames
const tier = (t: Partial<TierDecision> & Pick<TierDecision, "tier">): TierDecision => ({
  algorithm: "gcra",
  allowed: true,
  limit: 5,
  remaining: 3,
  resetMs: 0,
  retryAfterMs: 0,
  windowMs: 1000,
  ...t
})

describe("QuotaHeaders", () => {
  it("an admitted request lists every tier, t being when the tier is full again; every policy item has w", () => {
    const tiers = [
      tier({ tier: "spike", limit: 5, remaining: 4, resetMs: 10_000, windowMs: 50_000 }),
      tier({
        tier: "count",
        algorithm: "sliding-window",
        limit: 8,
        remaining: 7,
        resetMs: 3_600_000,
        windowMs: 3_600_000
      })
    ]
    expect(QuotaHeaders.of({ allowed: true, tiers }, names)).toEqual({
      "ratelimit-policy": `"spike";q=5;w=50, "count";q=8;w=3600`,
      ratelimit: `"spike";r=4;t=10, "count";r=7;t=3600`
    })
  })

  it("a refusal lists only the tiers that refused, t being the time until the request would pass", () => {
    const tiers = [
      tier({ tier: "spike", allowed: false, remaining: 0, resetMs: 50_000, retryAfterMs: 9_001 }),
      tier({ tier: "count", remaining: 7, resetMs: 3_600_000 })
    ]
    const headers = QuotaHeaders.of({ allowed: false, tiers }, names)
    expect(RateLimit.parse(headers["ratelimit"])).toEqual([{ name: "spike", params: { r: 0, t: 10 } }])
    expect(RateLimit.parse(headers["ratelimit-policy"]).map((i) => i.name)).toEqual(["spike", "count"])
  })

  it("a request that can never pass has no t; a negative time is 0; no tiers, no headers; names are the caller's", () => {
    const never = [tier({ tier: "spike", allowed: false, remaining: 5, retryAfterMs: Infinity })]
    expect(QuotaHeaders.of({ allowed: false, tiers: never }, names)["ratelimit"]).toBe(`"spike";r=5`)
    const late = [tier({ tier: "spike", resetMs: -20 })]
    expect(QuotaHeaders.of({ allowed: true, tiers: late }, names)["ratelimit"]).toBe(`"spike";r=3;t=0`)
    expect(QuotaHeaders.of({ allowed: true, tiers: [] }, names)).toEqual({})
    expect(
      Object.keys(
        QuotaHeaders.of({ allowed: true, tiers: late }, { rateLimitPolicy: "x-policy", rateLimit: "x-limit" })
      )
    ).toEqual(["x-policy", "x-limit"])
  })
})

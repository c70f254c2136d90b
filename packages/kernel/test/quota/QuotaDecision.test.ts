import * as QuotaDecision from "@sluice/kernel/quota/QuotaDecision"
import * as QuotaPlan from "@sluice/kernel/quota/QuotaPlan"
import { describe, expect, it } from "vitest"

const plan = QuotaPlan.compile({
  tiers: [
    { name: "spike", algorithm: "gcra", limit: 10, periodMs: 1000, burst: 5 },
    { name: "count", algorithm: "sliding-window", limit: 100, periodMs: 3_600_000 }
  ]
})

const tier = (name: string, allowed: boolean, retryAfterMs: number): QuotaPlan.TierDecision => ({
  tier: name,
  algorithm: "gcra",
  allowed,
  limit: 5,
  remaining: allowed ? 1 : 0,
  resetMs: 0,
  retryAfterMs,
  windowMs: 500
})

describe("quota decisions", () => {
  it("a store answer becomes the verdict: the first denying tier, the longest wait", () => {
    const allowed = QuotaDecision.make("a", { allowed: true, tiers: [tier("x", true, 0)], now: 1 }, "store")
    expect(allowed).toMatchObject({ client: "a", allowed: true, deniedBy: undefined, retryAfterMs: 0 })
    const tiers = [tier("x", true, 0), tier("y", false, 100), tier("z", false, 300)]
    const denied = QuotaDecision.make("a", { allowed: false, tiers, now: 1 }, "fallback")
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 300, source: "fallback" })
    expect(denied.deniedBy?.tier).toBe("y")
    expect(QuotaDecision.reportedTier(denied)?.tier).toBe("y")
    // a denial with no denying tier (a blocked client's tiers all deny; defensive): the first
    expect(QuotaDecision.reportedTier({ ...denied, deniedBy: undefined })?.tier).toBe("x")
  })

  it("when the store fails: the mode decides, a cost no tier can hold is denied whatever the mode", () => {
    const local = { allowed: true, tiers: [], now: 5 }
    const open = QuotaDecision.whenStoreFails("fail-open", plan, 1, 1000, () => local)
    expect(open.source).toBe("fail-open")
    expect(open.result.allowed).toBe(true)
    expect(open.result.tiers.map((t) => t.remaining)).toEqual([5, 100])
    const closed = QuotaDecision.whenStoreFails("fail-closed", plan, 1, 1000, () => local)
    expect(closed.source).toBe("fail-closed")
    expect(closed.result.tiers.map((t) => [t.allowed, t.retryAfterMs])).toEqual([
      [false, 1000],
      [false, 1000]
    ])
    expect(QuotaDecision.whenStoreFails("fallback", plan, 1, 1000, () => local)).toEqual({
      source: "fallback",
      result: local
    })
    for (const mode of ["fail-open", "fail-closed", "fallback"] as const) {
      const never = QuotaDecision.whenStoreFails(mode, plan, 6, 1000, () => {
        throw new Error("the fallback is not asked")
      })
      expect(never.source).toBe("store")
      expect(QuotaDecision.retryAfterMs(never.result.tiers)).toBe(Infinity)
    }
  })

  it("an open circuit asks to wait until it may half-open, whole ms, at least 1", () => {
    expect(QuotaDecision.circuitOpenWaitMs(0)).toBe(1)
    expect(QuotaDecision.circuitOpenWaitMs(0.2)).toBe(1)
    expect(QuotaDecision.circuitOpenWaitMs(499.1)).toBe(500)
  })

  it("withQuota waits only for a permit that comes within its bound", () => {
    expect(QuotaDecision.waitMs(1000, 1500, 200)).toBe(200)
    expect(QuotaDecision.waitMs(1000, 1500, 500)).toBe(500)
    expect(QuotaDecision.waitMs(1000, 1500, 501)).toBeUndefined()
    expect(QuotaDecision.waitMs(1000, 1500, Infinity)).toBeUndefined()
    // no bound: refused at once
    expect(QuotaDecision.waitMs(1000, 1000, 1)).toBeUndefined()
    expect(QuotaDecision.waitMs(1000, 1000, 0)).toBe(1)
  })

  it("a late admission is refunded only when the caller was told no", () => {
    const admitted = { allowed: true, tiers: [], now: 0 }
    const denied = { allowed: false, tiers: [], now: 0 }
    expect(QuotaDecision.refundsLate(admitted, 1, false)).toBe(true)
    expect(QuotaDecision.refundsLate(admitted, 1, true)).toBe(false)
    expect(QuotaDecision.refundsLate(admitted, 0, false)).toBe(false)
    expect(QuotaDecision.refundsLate(denied, 1, false)).toBe(false)
  })

  it("a denial's event and what its refusal reports name the tier it is reported under", () => {
    const tiers = [tier("x", true, 0), tier("y", false, 100), tier("z", false, 300)]
    const decision = QuotaDecision.make("a", { allowed: false, tiers, now: 1 }, "store")
    expect(QuotaDecision.denied(decision, 42)).toEqual({
      _tag: "Denied",
      client: "a",
      tier: "y",
      retryAfterMs: 300,
      source: "store",
      at: 42
    })
    expect(QuotaDecision.refusal(decision)).toEqual({
      tier: "y",
      limit: 5,
      remaining: 0,
      retryAfterMs: 300,
      client: "a"
    })
  })
})

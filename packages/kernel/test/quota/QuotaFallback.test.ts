import { Fallback } from "@sluice/kernel/quota/QuotaFallback"
import * as QuotaPlan from "@sluice/kernel/quota/QuotaPlan"
import { describe, expect, it } from "vitest"

const plan = QuotaPlan.compile({
  tiers: [{ name: "rate", algorithm: "gcra", limit: 10, periodMs: 1000, burst: 10 }]
})
const now = 1_800_000_000_000

describe("the local fallback", () => {
  it("holds a share of every plan, scaled once per plan", () => {
    const fallback = new Fallback({ maxClients: 100, share: 0.3 })
    expect(fallback.plan(plan).tiers[0]!.capacity).toBe(3)
    expect(fallback.plan(plan)).toBe(fallback.plan(plan))
    const verdicts = Array.from({ length: 4 }, () => fallback.check("a", plan, 1, now).allowed)
    expect(verdicts).toEqual([true, true, true, false])
    expect(new Fallback({ maxClients: 100, share: 1 }).plan(plan)).toBe(plan)
  })

  it("learns the store's denials: denied until the store would admit", () => {
    const fallback = new Fallback({ maxClients: 100, share: 1 })
    const denied = { allowed: false, tiers: [{ ...tier(), allowed: false, retryAfterMs: 250 }], now }
    fallback.learn("a", plan, denied, 1, now)
    expect(fallback.check("a", plan, 1, now + 249).allowed).toBe(false)
    expect(fallback.check("a", plan, 1, now + 250).allowed).toBe(true)
    // an endless wait (a cost above capacity) teaches nothing
    fallback.denied(
      "b",
      plan,
      { ...denied, tiers: [{ ...tier(), allowed: false, retryAfterMs: Infinity }] },
      now
    )
    expect(fallback.size).toBe(1)
  })

  it("learns an admission that left a gcra tier empty: denied for one emission interval", () => {
    const fallback = new Fallback({ maxClients: 100, share: 1 })
    const emptied = { allowed: true, tiers: [{ ...tier(), remaining: 0 }], now }
    fallback.learn("a", plan, emptied, 1, now)
    expect(fallback.check("a", plan, 1, now + 99).allowed).toBe(false)
    expect(fallback.check("a", plan, 1, now + 100).allowed).toBe(true)
    // a peek (cost 0) or a tier with room teaches nothing
    fallback.learn("b", plan, emptied, 0, now)
    fallback.learn("c", plan, { ...emptied, tiers: [{ ...tier(), remaining: 4 }] }, 1, now)
    expect(fallback.size).toBe(1)
  })

  it("penalties, blocks and resets reach it", () => {
    const fallback = new Fallback({ maxClients: 100, share: 1 })
    fallback.adjust("a", plan, 10, now)
    expect(fallback.check("a", plan, 1, now).allowed).toBe(false)
    fallback.reset("a")
    expect(fallback.check("a", plan, 1, now).allowed).toBe(true)
    fallback.block("b", plan, 50, now)
    expect(fallback.check("b", plan, 1, now + 49).allowed).toBe(false)
    expect(fallback.check("b", plan, 1, now + 50).allowed).toBe(true)
  })
})

function tier(): QuotaPlan.TierDecision {
  return {
    tier: "rate",
    algorithm: "gcra",
    allowed: true,
    limit: 10,
    remaining: 9,
    resetMs: 100,
    retryAfterMs: 0,
    windowMs: 1000
  }
}

import { MemoryQuotaState } from "@sluice/kernel/quota/MemoryStore"
import * as QuotaPlan from "@sluice/kernel/quota/QuotaPlan"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { arbBlock, arbCost, arbDt, arbPlan, capacityOf, costOf, expectExact } from "./ExactCases.js"
import { type ExactTier, ExactReference } from "./ExactReference.js"

const compile = (tiers: ReadonlyArray<ExactTier>, blockForMs = 0) => QuotaPlan.compile({ tiers, blockForMs })

const memory = () => new MemoryQuotaState({ maxClients: 100_000 })

describe("Quota arithmetic is exact (BigInt reference, epoch-scale clocks)", () => {
  it("full bursts at 7/s and 6/s are admitted at epoch magnitude; remaining and retry-after exact", () => {
    const store = memory()
    const now = 1_800_000_000_123
    const seven = compile([{ name: "s", algorithm: "gcra", limit: 7, periodMs: 1000, burst: 5 }])
    const results = Array.from({ length: 6 }, () => store.check("c", seven, 1, now))
    expect(results.map((r) => r.allowed)).toEqual([true, true, true, true, true, false])
    expect(results.map((r) => r.tiers[0]!.remaining)).toEqual([4, 3, 2, 1, 0, 0])
    // the 6th: one emission interval (1000 / 7 ms) after the first, rounded up to a whole ms
    expect(results[5]!.tiers[0]!.retryAfterMs).toBe(143)
    expect(results[4]!.tiers[0]!.resetMs).toBe(715) // 5 × 1000/7 = 714.28…
    const six = compile([{ name: "s", algorithm: "gcra", limit: 6, periodMs: 1000, burst: 2 }])
    expect([store.check("d", six, 1, now).allowed, store.check("d", six, 1, now).allowed]).toEqual([
      true,
      true
    ])
    const hourly = compile([
      { name: "h", algorithm: "gcra", limit: 1_000_000_000, periodMs: 3_600_000, burst: 1_000_000_000 }
    ])
    expect(store.check("e", hourly, 1_000_000_000, now).allowed).toBe(true)
    const next = store.check("e", hourly, 1, now)
    expect(next).toMatchObject({ allowed: false })
    expect(next.tiers[0]!.retryAfterMs).toBe(1) // 3.6 µs per unit: the next whole ms
  })

  it("memory store: random plans and steps agree with the reference, field for field", () => {
    const samples = fc.sample(
      fc.tuple(
        arbPlan,
        fc.array(fc.record({ dt: arbDt, cost: arbCost }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 0, max: 1_000_000_000 })
      ),
      { numRuns: 300, seed: 15 }
    )
    let denied = 0
    let allowed = 0
    for (const [tiers, steps, offset] of samples) {
      const plan = compile(tiers)
      const store = memory()
      const reference = new ExactReference(tiers)
      const minCap = Math.min(...tiers.map(capacityOf))
      let now = 1_800_000_000_000 + offset
      const history: Array<[number, number]> = []
      for (const step of steps) {
        now += step.dt
        const cost = costOf(step.cost, minCap)
        history.push([step.dt, cost])
        const result = store.check("c", plan, cost, now)
        expect(result.now).toBe(now)
        const expected = reference.check(now, cost)
        expectExact(JSON.stringify({ tiers, history }), reference, now, cost, result, expected)
        if (result.allowed) allowed++
        else denied++
      }
    }
    // both outcomes are exercised
    expect(denied).toBeGreaterThan(500)
    expect(allowed).toBeGreaterThan(500)
  })

  it("memory store with blockFor: random plans and steps agree with the reference, field for field", () => {
    const samples = fc.sample(
      fc.tuple(
        arbPlan,
        arbBlock,
        fc.array(fc.record({ dt: arbDt, cost: arbCost }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 0, max: 1_000_000_000 })
      ),
      { numRuns: 300, seed: 17 }
    )
    let blocks = 0
    let blockedDenials = 0
    let allowed = 0
    for (const [tiers, blockForMs, steps, offset] of samples) {
      const plan = compile(tiers, blockForMs)
      const store = memory()
      const reference = new ExactReference(tiers, blockForMs)
      const minCap = Math.min(...tiers.map(capacityOf))
      let now = 1_800_000_000_000 + offset
      const history: Array<[number, number]> = []
      let blockedUntil = -Infinity
      for (const step of steps) {
        now += step.dt
        const cost = costOf(step.cost, minCap)
        history.push([step.dt, cost])
        const result = store.check("c", plan, cost, now)
        const expected = reference.check(now, cost)
        expectExact(JSON.stringify({ tiers, blockForMs, history }), reference, now, cost, result, expected)
        if (result.allowed) allowed++
        else if (blockedUntil > now) blockedDenials++
        else if (cost > 0) {
          blocks++
          blockedUntil = now + blockForMs
        }
      }
    }
    // blocks start, deny while in force, and end
    expect(blocks).toBeGreaterThan(300)
    expect(blockedDenials).toBeGreaterThan(100)
    expect(allowed).toBeGreaterThan(500)
  })
})

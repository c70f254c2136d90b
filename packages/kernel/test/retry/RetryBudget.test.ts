import * as Budget from "@sluice/kernel/retry/RetryBudget"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const make = (ratio: number, minRetriesPerSecond: number, windowMillis = 10_000, buckets = 10) =>
  new Budget.Budget({ ratio, minRetriesPerSecond, windowMillis, buckets })

describe("Budget", () => {
  it("retries are at most ratio × requests + the floor over the window, to the last one", () => {
    const budget = make(0.1, 1)
    for (let i = 0; i < 1000; i++) budget.recordRequest(i)
    let granted = 0
    while (budget.tryWithdraw(1000)) granted++
    expect(granted).toBe(0.1 * 1000 + 1 * 10)
    expect(budget.stats(1000)).toEqual({ requests: 1000, retries: 110, allowed: 110, available: 0 })
  })

  it("slides: spent budget comes back once the window has passed; a quiet client keeps its floor", () => {
    const budget = make(0.1, 0.1) // reserve = 1 retry per window
    expect(budget.reserve).toBe(1)
    budget.recordRequest(0)
    expect(budget.tryWithdraw(0)).toBe(true)
    expect(budget.tryWithdraw(0)).toBe(false)
    expect(budget.stats(11_000)).toEqual({ requests: 0, retries: 0, allowed: 1, available: 1 })
    expect(budget.tryWithdraw(11_000)).toBe(true)
    expect(budget.tryWithdraw(11_000)).toBe(false)
    // Ten requests earn one more retry.
    for (let i = 0; i < 10; i++) budget.recordRequest(11_000)
    expect(budget.tryWithdraw(11_000)).toBe(true)
    expect(budget.tryWithdraw(11_000)).toBe(false)
  })

  it("a refund gives a withdrawal back from its own bucket: the count stays right when that bucket leaves", () => {
    const budget = make(0, 0.2) // reserve = 2 retries per 10 s window
    expect(budget.tryWithdraw(500)).toBe(true)
    expect(budget.tryWithdraw(5_500)).toBe(true)
    expect(budget.tryWithdraw(5_500)).toBe(false)
    budget.refund(500, 5_600)
    expect(budget.stats(5_600)).toMatchObject({ retries: 1, available: 1 })
    // 500's bucket has left the window: a refund taken from the latest bucket would now read 0
    expect(budget.stats(10_600)).toMatchObject({ retries: 1, available: 1 })
    expect(budget.stats(15_600)).toMatchObject({ retries: 0, available: 2 })
    // a refund of a withdrawal already out of the window, or a second one, changes nothing
    expect(budget.tryWithdraw(15_600)).toBe(true)
    budget.refund(500, 15_700)
    budget.refund(15_600, 15_700)
    budget.refund(15_600, 15_700)
    expect(budget.stats(15_700)).toMatchObject({ retries: 0, available: 2 })
  })

  it("the reserve is the floor per second over the window", () => {
    expect(Budget.reserveOf(0.5, 10_000)).toBe(5)
    expect(Budget.reserveOf(1, 2500)).toBe(2.5)
    expect(Budget.reserveOf(0, 10_000)).toBe(0)
    const budget = make(0, 0.5) // 5 retries per window, whatever the traffic
    let n = 0
    while (budget.tryWithdraw(0)) n++
    expect(n).toBe(5)
  })

  it("exact allowance: 0.1 × 30 requests allows 3 retries, 0.1 × 29 allows 2 (no floating-point miss)", () => {
    const budget = make(0.1, 0)
    for (let i = 0; i < 29; i++) budget.recordRequest(0)
    expect(budget.stats(0).available).toBe(2)
    budget.recordRequest(0)
    // 0.1 * 30 is 3.0000000000000004 in floating point; the allowance is exactly 3
    expect(budget.stats(0).available).toBe(3)
    expect([budget.tryWithdraw(0), budget.tryWithdraw(0), budget.tryWithdraw(0)]).toEqual([true, true, true])
    expect(budget.tryWithdraw(0)).toBe(false)
    // 0.7 × 10 is 7.000000000000001: 7 retries, not 8 or 6
    const seven = make(0.7, 0)
    for (let i = 0; i < 10; i++) seven.recordRequest(0)
    let n = 0
    while (seven.tryWithdraw(0)) n++
    expect(n).toBe(7)
    // a fractional reserve: ⌊0.1 × 10 + 2.5⌋ = 3
    const fractional = make(0.1, 1, 2500)
    for (let i = 0; i < 10; i++) fractional.recordRequest(0)
    expect(fractional.stats(0)).toEqual({ requests: 10, retries: 0, allowed: 3.5, available: 3 })
  })

  it("rejects a ratio or window it cannot use", () => {
    expect(() => make(-0.1, 0)).toThrow(RangeError)
    expect(() => make(Number.NaN, 0)).toThrow(RangeError)
    expect(() => make(0.1, 0, 0)).toThrow(RangeError)
  })

  it("never grants more than ratio × requests + floor × window within any window", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 5, noNaN: true }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 700 }), fc.boolean()), { maxLength: 300 }),
        (ratio, floor, steps) => {
          const budget = make(ratio, floor, 5000)
          let now = 0
          for (const [dt, isRetry] of steps) {
            now += dt
            if (isRetry) budget.tryWithdraw(now)
            else budget.recordRequest(now)
            const stats = budget.stats(now)
            expect(stats.retries).toBeLessThanOrEqual(ratio * stats.requests + floor * 5 + 1e-6)
          }
        }
      ),
      { numRuns: 200 }
    )
  })
})

describe("Budget.options", () => {
  it("10% of requests over 10 s in 10 buckets, a floor of one retry per second, 10,000 clients", () => {
    const { buckets, maxKeys, minRetriesPerSecond, ratio, window } = Budget.options
    expect([
      ratio.fallback.value,
      window.fallback.value,
      buckets.fallback.value,
      minRetriesPerSecond.fallback.value,
      maxKeys.fallback.value
    ]).toEqual([0.1, 10_000, 10, 1, 10_000])
    expect(ratio.check(1.5)).toBe("expected a ratio in [0, 1], got 1.5")
    expect(window.check(0)).toBe("expected a positive, finite duration, got 0")
    expect(buckets.check(0)).toBe("expected a positive integer, got 0")
    expect(minRetriesPerSecond.check(-1)).toBe("expected a non-negative finite number, got -1")
    expect(minRetriesPerSecond.check(0)).toBeUndefined()
    expect(maxKeys.check(2.5)).toBe("expected a positive integer, got 2.5")
  })
})

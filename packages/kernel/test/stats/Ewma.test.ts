import * as EwmaModule from "@sluice/kernel/stats/Ewma"
import { Ewma, EwmaRate } from "@sluice/kernel/stats/Ewma"
import { describe, expect, it } from "vitest"

describe("Ewma", () => {
  it("moves 63% of a step after tau", () => {
    const avg = new Ewma({ tauMillis: 10_000 })
    expect(avg.value()).toBeUndefined()
    avg.update(0, 100)
    expect(avg.value()).toBe(100)
    avg.update(10_000, 0)
    expect(avg.value()).toBeCloseTo(100 * Math.exp(-1), 6)
  })

  it("ignores non-finite samples; a sample from the past has no weight", () => {
    const avg = new Ewma({ tauMillis: 1_000 })
    avg.update(0, Number.NaN)
    avg.update(0, Infinity)
    expect(avg.value()).toBeUndefined()
    avg.update(5_000, 10)
    avg.update(1_000, 50)
    expect(avg.value()).toBe(10)
  })

  it("rate converges to a steady event rate and decays when silent", () => {
    const rate = new EwmaRate({ windowMillis: 60_000, tickMillis: 5_000 })
    let now = 0
    for (let i = 0; i < 120; i++) {
      rate.mark(now, 50)
      now += 5_000
    }
    expect(rate.rate(now)).toBeCloseTo(10, 3)
    now += 60_000
    const decayed = rate.rate(now)
    expect(decayed).toBeLessThan(10 * Math.exp(-1) * 1.2)
    expect(decayed).toBeGreaterThan(10 * Math.exp(-1) * 0.8)
  })

  it("rejects bad options with a RangeError naming the field", () => {
    expect(() => new EwmaRate({ windowMillis: 1_000, tickMillis: 5_000 })).toThrow(/must not exceed/)
    // the default tick (5 s) must fit the window too
    expect(() => new EwmaRate({ windowMillis: 1_000 })).toThrow(RangeError)
    expect(new EwmaRate({ windowMillis: 300_000 }).tickMillis).toBe(5_000)
    expect(() => new EwmaRate({ windowMillis: 0 })).toThrow(/windowMillis/)
    expect(() => new EwmaRate({ windowMillis: 60_000, tickMillis: Number.NaN })).toThrow(/tickMillis/)
    expect(() => new Ewma({ tauMillis: 0 })).toThrow(/tau/)
    expect(() => new Ewma({ tauMillis: Infinity })).toThrow(/tau/)
  })
})

describe("Ewma options", () => {
  it("tau, window and tick positive and finite; the tick 5 s by default and never longer than the window", () => {
    expect(EwmaModule.options.tau.check(0)).toBe("expected a positive, finite duration, got 0")
    expect(EwmaModule.rateOptions.window.check(-1)).toBe("expected a positive, finite duration, got -1")
    expect(EwmaModule.rateOptions.tick.fallback.value).toBe(5000)
    expect(EwmaModule.tickIssue(60_000, 5000)).toBeUndefined()
    expect(EwmaModule.tickIssue(5000, 5000)).toBeUndefined()
    expect(EwmaModule.tickIssue(1000, 5000)).toBe("tick must not exceed window")
  })
})

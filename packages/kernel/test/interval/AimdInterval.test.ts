import * as AimdInterval from "@sluice/kernel/interval/AimdInterval"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const base = { min: 1000, max: 16_000, step: 1000 } as const

describe("AimdInterval", () => {
  it("doubles on throttle up to max and shrinks by step down to min", () => {
    const aimd = AimdInterval.make(base)
    expect(aimd.interval).toBe(1000)
    const ups: Array<number> = []
    for (let i = 0; i < 6; i++) ups.push(aimd.signal(true))
    expect(ups).toEqual([2000, 4000, 8000, 16000, 16000, 16000])
    const downs: Array<number> = []
    for (let i = 0; i < 17; i++) downs.push(aimd.signal(false))
    expect(downs.slice(0, 3)).toEqual([15000, 14000, 13000])
    expect(downs.slice(-3)).toEqual([1000, 1000, 1000])
  })

  it("honours factor, step and initial", () => {
    const aimd = AimdInterval.make({ ...base, factor: 1.5, step: 250, initial: 4000 })
    expect(aimd.interval).toBe(4000)
    expect(aimd.signal(true)).toBe(6000)
    expect(aimd.signal(false)).toBe(5750)
    // the step is usable unbound
    const { signal } = aimd
    expect(signal(false)).toBe(5500)
  })

  it("next: the same rule as a function of the interval", () => {
    const config = { min: 1000, max: 16_000, step: 1000, rateStep: undefined, factor: 2 }
    expect(AimdInterval.next(config, 3000, true)).toBe(6000)
    expect(AimdInterval.next(config, 12_000, true)).toBe(16_000)
    expect(AimdInterval.next(config, 3000, false)).toBe(2000)
    expect(AimdInterval.next(config, 1500, false)).toBe(1000)
  })

  it("clients following the same signals from different starts converge once a bound is hit", () => {
    const clients = [1, 3, 7, 12, 16].map((s) => AimdInterval.make({ ...base, initial: s * 1000 }))
    const signals = [true, true, true, false, true, true, false, false, true]
    for (const s of signals) for (const c of clients) c.signal(s)
    const intervals = clients.map((c) => c.interval)
    expect(new Set(intervals).size).toBe(1)
  })

  it("rateStep mode: a clear signal raises the rate by rateStep per second waited", () => {
    const aimd = AimdInterval.make({ min: 100, max: 60_000, rateStep: 0.25, initial: 2000 })
    expect(aimd.rateStep).toBe(0.25)
    expect(aimd.signal(false)).toBeCloseTo(1000, 6) // 1/2 + 0.25 × 2 = 1 per second
    expect(aimd.signal(false)).toBeCloseTo(800, 6) // 1 + 0.25 × 1 = 1.25 per second
    expect(aimd.signal(true)).toBeCloseTo(1600, 6)
    for (let i = 0; i < 1000; i++) aimd.signal(false)
    expect(aimd.interval).toBe(100)
  })

  // 7 clients, each wanting a save every 0.5 s (14/s in total); the server throttles
  // while more than 30 saves arrived in the last 5 s (6/s). They start far apart.
  const shareCapacity = (options: { readonly step: number } | { readonly rateStep: number }) => {
    let seed = 42
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    const clients = [0.5, 1, 2, 4, 8, 16, 30].map((initial) => ({
      aimd: AimdInterval.make({ min: 500, max: 30_000, initial: initial * 1000, ...options }),
      next: random() * 1000,
      saves: 0
    }))
    const arrivals: Array<number> = []
    for (;;) {
      const client = clients.reduce((a, b) => (a.next < b.next ? a : b))
      const now = client.next
      if (now > 600_000) break
      while (arrivals.length > 0 && arrivals[0]! <= now - 5000) arrivals.shift()
      arrivals.push(now)
      if (now > 300_000) client.saves++
      const interval = client.aimd.signal(arrivals.length > 30)
      client.next = now + interval * (0.95 + 0.1 * random())
    }
    const rates = clients.map((c) => c.saves / 300)
    const total = rates.reduce((a, b) => a + b, 0)
    return { total, fairness: (total * total) / (rates.length * rates.reduce((a, b) => a + b * b, 0)) }
  }

  it("rateStep mode: clients sharing a capacity through one throttle signal converge to equal rates", () => {
    const { fairness, total } = shareCapacity({ rateStep: 0.2 })
    expect(fairness).toBeGreaterThan(0.99)
    expect(total).toBeGreaterThan(5)
    expect(total).toBeLessThan(6.5)
    // the interval-step mode, same run: the fast clients keep the capacity (see the module doc)
    expect(shareCapacity({ step: 250 }).fairness).toBeLessThan(0.9)
  })

  it("the interval always stays within [min, max] (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5000 }),
        fc.integer({ min: 0, max: 50000 }),
        fc.integer({ min: 1, max: 5000 }),
        fc.double({ min: 1.01, max: 10, noNaN: true }),
        fc.array(fc.boolean(), { maxLength: 200 }),
        (min, extra, step, factor, signals) => {
          const aimd = AimdInterval.make({ min, max: min + extra, step, factor })
          for (const s of signals) {
            const before = aimd.interval
            const after = aimd.signal(s)
            if (after < min || after > min + extra) return false
            if (s ? after < before : after > before) return false
          }
          return true
        }
      )
    )
  })

  it("throws a RangeError for options outside the rules", () => {
    const cases: Array<AimdInterval.Options> = [
      { ...base, min: 20_000 },
      { ...base, max: 0 },
      { ...base, step: -1 },
      { ...base, factor: 1 },
      { ...base, factor: Number.NaN },
      { ...base, initial: 60_000 },
      { min: 1, max: 2 },
      { ...base, rateStep: 1 },
      { min: 1, max: 2, rateStep: 0 }
    ]
    for (const options of cases) expect(() => AimdInterval.make(options)).toThrow(RangeError)
  })

  it("issues name the field: ranges first, then the combination of step, bounds and initial", () => {
    const paths = (options: AimdInterval.Options) => AimdInterval.issues(options).map((i) => i.path)
    expect(AimdInterval.issues(base)).toEqual([])
    expect(paths({ min: 0, max: Infinity, step: -1, rateStep: 0, factor: 1, initial: Number.NaN })).toEqual([
      ["min"],
      ["max"],
      ["step"],
      ["rateStep"],
      ["factor"],
      ["initial"]
    ])
    expect(AimdInterval.issues({ ...base, factor: 1 })[0]!.message).toBe(
      "expected a finite number greater than 1, got 1"
    )
    expect(AimdInterval.issues({ min: 1, max: 2 })).toEqual([
      { path: ["step"], message: "give exactly one of step (interval) or rateStep (rate)" }
    ])
    expect(paths({ ...base, rateStep: 1, min: 20_000 })).toEqual([["step"], ["min"]])
    expect(paths({ ...base, initial: 500 })).toEqual([["initial"]])
    expect(paths({ min: 1, max: 2, rateStep: 0.5, initial: 2 })).toEqual([])
  })
})

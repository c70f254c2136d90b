import * as AimdLimit from "@sluice/kernel/limit/AimdLimit"
import type * as Limit from "@sluice/kernel/limit/Limit"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const make = (config: Partial<AimdLimit.Config> = {}) =>
  new AimdLimit.AimdLimit({
    initial: 20,
    minLimit: 1,
    maxLimit: 1000,
    backoffRatio: 0.9,
    timeout: Infinity,
    ...config
  })

const sample = (outcome: Limit.Outcome, inFlight: number, rtt = 10): Limit.Sample => ({
  id: 0,
  nextId: 1,
  outcome,
  rtt,
  inFlight,
  now: 0
})

describe("AimdLimit", () => {
  it("at 20 grows to 21 on a used success, not on an unused one", () => {
    const aimd = make()
    expect(aimd.limit).toBe(20)
    expect(aimd.onSample(sample("success", 9))).toBe(20)
    expect(aimd.onSample(sample("success", 10))).toBe(21)
    expect(aimd.onSample(sample("success", 11))).toBe(22)
  })

  it("at 30 a drop gives 27, then 24, 21, …; ignored changes nothing", () => {
    const aimd = make({ initial: 30 })
    expect(aimd.onSample(sample("dropped", 30))).toBe(27)
    expect(aimd.onSample(sample("ignored", 30))).toBe(27)
    expect(aimd.onSample(sample("dropped", 30))).toBe(24)
    expect(aimd.onSample(sample("dropped", 30))).toBe(21)
    expect(aimd.onSample(sample("dropped", 30))).toBe(18)
  })

  it("clamps to [minLimit, maxLimit]", () => {
    const aimd = make({ initial: 2, minLimit: 2, maxLimit: 3, backoffRatio: 0.5 })
    expect(aimd.onSample(sample("dropped", 2))).toBe(2)
    expect(aimd.onSample(sample("success", 2))).toBe(3)
    expect(aimd.onSample(sample("success", 3))).toBe(3)
  })

  it("a success slower than the timeout counts as a drop; one that takes exactly the timeout does not", () => {
    // Netflix's AIMDLimit drops at `rtt > timeout`.
    const aimd = make({ initial: 10, timeout: 100 })
    expect(aimd.onSample(sample("success", 10, 99))).toBe(11)
    expect(aimd.onSample(sample("success", 11, 100))).toBe(12)
    expect(aimd.onSample(sample("success", 12, 100.001))).toBe(10)
  })

  it("property: a drop gives exactly floor(limit × backoffRatio) (never below minLimit), and the limit stays an integer in bounds", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 99 }),
        fc.array(fc.tuple(fc.constantFrom<Limit.Outcome>("success", "dropped", "ignored"), fc.nat(20_000))),
        (initial, percent, steps) => {
          const backoffRatio = percent / 100
          const aimd = make({ initial, maxLimit: 10_000, backoffRatio })
          for (const [outcome, inFlight] of steps) {
            const before = aimd.limit
            const after = aimd.onSample(sample(outcome, inFlight))
            // integer arithmetic: ⌊before × percent / 100⌋ with no floating-point rounding
            if (outcome === "dropped") expect(after).toBe(Math.max(1, Math.floor((before * percent) / 100)))
            expect(Number.isInteger(after) && after >= 1 && after <= 10_000).toBe(true)
          }
        }
      )
    )
  })
})

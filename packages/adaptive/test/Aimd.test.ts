import { Aimd, LimitAlgorithm } from "@sluice/adaptive"
import { Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"

const sample = (outcome: LimitAlgorithm.Outcome, inFlight: number, rtt = 10): LimitAlgorithm.Sample => ({
  id: 0,
  nextId: 1,
  outcome,
  rtt,
  inFlight,
  now: 0
})

describe("Aimd", () => {
  it("at 20 grows to 21 on a used success, not on an unused one", () => {
    const aimd = Aimd.unsafeMake()
    expect(aimd.limit).toBe(20)
    expect(aimd.onSample(sample("success", 9))).toBe(20)
    expect(aimd.onSample(sample("success", 10))).toBe(21)
    expect(aimd.onSample(sample("success", 11))).toBe(22)
  })

  it("at 30 a drop gives 27, then 24, 21, …; ignored changes nothing", () => {
    const aimd = Aimd.unsafeMake({ initial: 30 })
    expect(aimd.onSample(sample("dropped", 30))).toBe(27)
    expect(aimd.onSample(sample("ignored", 30))).toBe(27)
    expect(aimd.onSample(sample("dropped", 30))).toBe(24)
    expect(aimd.onSample(sample("dropped", 30))).toBe(21)
    expect(aimd.onSample(sample("dropped", 30))).toBe(18)
  })

  it("clamps to [minLimit, maxLimit]", () => {
    const aimd = Aimd.unsafeMake({ initial: 2, minLimit: 2, maxLimit: 3, backoffRatio: 0.5 })
    expect(aimd.onSample(sample("dropped", 2))).toBe(2)
    expect(aimd.onSample(sample("success", 2))).toBe(3)
    expect(aimd.onSample(sample("success", 3))).toBe(3)
  })

  it("a success slower than the timeout counts as a drop; one that takes exactly the timeout does not", () => {
    // Netflix's AIMDLimit drops at `rtt > timeout`.
    const aimd = Aimd.unsafeMake({ initial: 10, timeout: "100 millis" })
    expect(aimd.onSample(sample("success", 10, 99))).toBe(11)
    expect(aimd.onSample(sample("success", 11, 100))).toBe(12)
    expect(aimd.onSample(sample("success", 12, 100.001))).toBe(10)
  })

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const cases: Array<[Aimd.AimdOptions, RegExp]> = [
        [{ backoffRatio: 1 }, /backoffRatio/],
        [{ backoffRatio: 0 }, /backoffRatio/],
        [{ backoffRatio: -0.5 }, /backoffRatio/],
        [{ minLimit: 10, maxLimit: 5, initial: 7 }, /minLimit/],
        [{ initial: 2.5 }, /initial/],
        [{ minLimit: -1 }, /minLimit/],
        [{ timeout: -1 }, /timeout/]
      ]
      for (const [bad, field] of cases) {
        const exit = yield* Effect.exit(Aimd.make(bad))
        expect(Exit.isFailure(exit)).toBe(true)
        if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
          expect(exit.cause.error).toBeInstanceOf(Options.InvalidOptions)
          expect(exit.cause.error.message).toMatch(field)
        }
        expect(() => Aimd.unsafeMake(bad)).toThrow(field)
      }
    })
  )
})

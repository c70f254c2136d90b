import { AimdLimit, LimitAlgorithm } from "@sluice/adaptive"
import { Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"

const sample = (outcome: LimitAlgorithm.Outcome, inFlight: number, rtt = 10): LimitAlgorithm.Sample => ({
  id: 0,
  nextId: 1,
  outcome,
  rtt,
  inFlight,
  now: 0
})

describe("AimdLimit", () => {
  // The rule itself (growth, exact back-off, bounds) is tested in the kernel (limit/AimdLimit).
  it("has the documented defaults", () => {
    expect(AimdLimit.makeUnsafe().options).toEqual({
      initial: 20,
      minLimit: 1,
      maxLimit: 1000,
      backoffRatio: 0.9
    })
    expect(AimdLimit.makeUnsafe().limit).toBe(20)
  })

  it("the timeout is a Duration: a success slower than it counts as a drop; one that takes exactly the timeout does not", () => {
    // Netflix's AIMDLimit drops at `rtt > timeout`.
    const aimd = AimdLimit.makeUnsafe({ initial: 10, timeout: "100 millis" })
    expect(aimd.onSample(sample("success", 10, 99))).toBe(11)
    expect(aimd.onSample(sample("success", 11, 100))).toBe(12)
    expect(aimd.onSample(sample("success", 12, 100.001))).toBe(10)
  })

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const cases: Array<[AimdLimit.AimdLimitOptions, RegExp]> = [
        [{ backoffRatio: 1 }, /backoffRatio/],
        [{ backoffRatio: 0 }, /backoffRatio/],
        [{ backoffRatio: -0.5 }, /backoffRatio/],
        [{ minLimit: 10, maxLimit: 5, initial: 7 }, /minLimit/],
        [{ initial: 2.5 }, /initial/],
        [{ minLimit: -1 }, /minLimit/],
        [{ timeout: -1 }, /timeout/]
      ]
      for (const [bad, field] of cases) {
        const exit = yield* Effect.exit(AimdLimit.make(bad))
        expect(Exit.isFailure(exit)).toBe(true)
        const error = Option.getOrUndefined(Exit.findErrorOption(exit))
        expect(error).toBeInstanceOf(Options.InvalidOptions)
        expect(error?.message).toMatch(field)
        expect(() => AimdLimit.makeUnsafe(bad)).toThrow(field)
      }
    })
  )
})

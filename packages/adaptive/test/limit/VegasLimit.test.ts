import { VegasLimit } from "@sluice/adaptive"
import { Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"

describe("VegasLimit", () => {
  // The rule itself (queue estimate, probes, Netflix's VegasLimitTest cases) is tested in the kernel (limit/VegasLimit).
  it("has the documented defaults", () => {
    const vegas = VegasLimit.makeUnsafe()
    expect(vegas.options).toEqual({
      initial: 20,
      minLimit: 1,
      maxLimit: 1000,
      alpha: 3,
      beta: 6,
      smoothing: 1,
      backoffRatio: 0.9,
      probeMultiplier: 30
    })
    expect(vegas.limit).toBe(20)
    expect(vegas.noLoadRtt).toBeUndefined()
    expect(vegas.probing).toBe(false)
  })

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const cases: Array<[VegasLimit.VegasLimitOptions, RegExp]> = [
        [{ alpha: 6, beta: 3 }, /alpha/],
        [{ smoothing: 0 }, /smoothing/],
        [{ smoothing: 1.5 }, /smoothing/],
        [{ backoffRatio: 1 }, /backoffRatio/],
        [{ minLimit: 10, maxLimit: 5, initial: 7 }, /minLimit/],
        [{ probeMultiplier: 0 }, /probeMultiplier/],
        [{ initial: -3 }, /initial/]
      ]
      for (const [bad, field] of cases) {
        const exit = yield* Effect.exit(VegasLimit.make(bad))
        expect(Exit.isFailure(exit)).toBe(true)
        const error = Option.getOrUndefined(Exit.findErrorOption(exit))
        expect(error).toBeInstanceOf(Options.InvalidOptions)
        expect(error?.message).toMatch(field)
        // a factory never throws when made; it reports the bad options when the limiter uses it
        expect(() => VegasLimit.factory(bad)).not.toThrow()
        expect(() => VegasLimit.factory(bad)("k")).toThrow(field)
      }
    })
  )
})

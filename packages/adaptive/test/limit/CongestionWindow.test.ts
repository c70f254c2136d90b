import { CongestionWindow, LimitAlgorithm } from "@sluice/adaptive"
import { Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"

type Sample = LimitAlgorithm.Sample
const drop = (id: number, nextId: number, inFlight = 10): Sample => ({
  id,
  nextId,
  outcome: "dropped",
  rtt: 1,
  inFlight,
  now: 0
})

describe("CongestionWindow", () => {
  // The window's rule (slow start, avoidance, Tahoe, Reno, bursts) is tested in the kernel (limit/CongestionWindow).
  it("has the documented defaults", () => {
    const cw = CongestionWindow.makeUnsafe()
    expect(cw.cwnd).toBe(20)
    expect(cw.limit).toBe(20)
    expect(cw.ssthresh).toBe(1024)
    expect(cw.options.backoffRatio).toBe(0.5)
    expect(cw.options.variant).toBe("reno")
  })

  it("backoffRatio 0.9 for a stable capacity: 30 → 27", () => {
    const cw = CongestionWindow.makeUnsafe({ initial: 30, backoffRatio: 0.9 })
    expect(cw.onSample(drop(0, 1))).toBeCloseTo(27, 12)
  })

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const cases: Array<[CongestionWindow.CongestionWindowOptions, RegExp]> = [
        [{ backoffRatio: 0 }, /backoffRatio/],
        [{ backoffRatio: 1 }, /backoffRatio/],
        [{ backoffRatio: 1.5 }, /backoffRatio/],
        [{ initial: -1 }, /initial/],
        [{ ssthresh: 0 }, /ssthresh/],
        [{ minLimit: 5, maxLimit: 3, initial: 4 }, /minLimit/],
        [{ initial: 50, maxLimit: 10 }, /initial/],
        [{ variant: "vegas" as any }, /variant/]
      ]
      for (const [bad, field] of cases) {
        const exit = yield* Effect.exit(CongestionWindow.make(bad))
        expect(Exit.isFailure(exit)).toBe(true)
        const error = Option.getOrUndefined(Exit.findErrorOption(exit))
        expect(error).toBeInstanceOf(Options.InvalidOptions)
        expect(error?.message).toMatch(field)
        // a factory never throws when made; it reports the bad options when the limiter uses it
        expect(() => CongestionWindow.factory(bad)).not.toThrow()
        expect(() => CongestionWindow.factory(bad)("k")).toThrow(field)
      }
    })
  )
})

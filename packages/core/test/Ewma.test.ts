import { Ewma } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit } from "effect"
import { TestClock } from "effect/testing"

describe("Ewma", () => {
  it.effect("moves 63% of a step after tau", () =>
    Effect.gen(function* () {
      const avg = yield* Ewma.make({ tau: "10 seconds" })
      expect(yield* Ewma.value(avg)).toBe(0)
      yield* Ewma.update(avg, 100)
      expect(yield* Ewma.value(avg)).toBe(100)
      yield* TestClock.adjust(Duration.seconds(10))
      yield* Ewma.update(avg, 0)
      expect(yield* Ewma.value(avg)).toBeCloseTo(100 * Math.exp(-1), 6)
    })
  )

  it.effect("rate converges to a steady event rate and decays when silent", () =>
    Effect.gen(function* () {
      const rate = yield* Ewma.makeRate({ window: "1 minute", tick: "5 seconds" })
      for (let i = 0; i < 120; i++) {
        yield* Ewma.mark(rate, 50)
        yield* TestClock.adjust(Duration.seconds(5))
      }
      expect(yield* Ewma.rate(rate)).toBeCloseTo(10, 3)
      yield* TestClock.adjust(Duration.minutes(1))
      const decayed = yield* Ewma.rate(rate)
      expect(decayed).toBeLessThan(10 * Math.exp(-1) * 1.2)
      expect(decayed).toBeGreaterThan(10 * Math.exp(-1) * 0.8)
    })
  )

  it.effect("rejects bad options", () =>
    Effect.gen(function* () {
      const bad = yield* Effect.exit(Ewma.makeRate({ window: "1 second", tick: "5 seconds" }))
      expect(Exit.isFailure(bad)).toBe(true)
      expect(() => Ewma.makeUnsafe({ tau: 0 })).toThrow(/tau/)
    })
  )
})

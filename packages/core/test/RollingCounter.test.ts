import { Options, RollingCounter } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit } from "effect"
import { TestClock } from "effect/testing"

describe("RollingCounter", () => {
  it.effect("counts over the window and forgets old buckets", () =>
    Effect.gen(function* () {
      const counter = yield* RollingCounter.make({ window: "10 seconds", buckets: 10 })
      yield* RollingCounter.add(counter)
      yield* RollingCounter.add(counter, 4)
      expect(yield* RollingCounter.total(counter)).toBe(5)
      yield* TestClock.adjust(Duration.seconds(5))
      yield* counter.pipe(RollingCounter.add(2))
      expect(yield* RollingCounter.total(counter)).toBe(7)
      yield* TestClock.adjust(Duration.seconds(5))
      expect(yield* RollingCounter.total(counter)).toBe(2)
      yield* TestClock.adjust(Duration.seconds(60))
      expect(yield* RollingCounter.total(counter)).toBe(0)
    })
  )

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const bads: Array<RollingCounter.RollingCounterOptions> = [
        { window: 0 },
        { window: -5 },
        { window: Number.NaN },
        { window: "10 seconds", buckets: 2.5 },
        { window: "10 seconds", buckets: 0 }
      ]
      for (const bad of bads) {
        const exit = yield* Effect.exit(RollingCounter.make(bad))
        expect(Exit.isFailure(exit)).toBe(true)
        const reason = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
        if (reason?._tag === "Fail") {
          const error = reason.error
          expect(error).toBeInstanceOf(Options.InvalidOptions)
          expect(error.message).toMatch(bad.window === "10 seconds" ? /buckets/ : /window/)
        }
      }
      expect(() => RollingCounter.makeUnsafe({ window: -1 })).toThrow(/window/)
    })
  )
})

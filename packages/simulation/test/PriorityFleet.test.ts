// The client fleet of `bench:overload` in virtual time: a server that sheds by priority,
// operations at 10× its capacity. Every figure is exact for its seed.
import { describe, expect, it } from "@effect/vitest"
import { PriorityFleet } from "@sluice/simulation"
import { Effect, Exit } from "effect"

describe("PriorityFleet", () => {
  it.live(
    "the client's defaults get at least the naive fleet's goodput, with a tenth of its attempts, CRITICAL all served",
    () =>
      Effect.gen(function* () {
        const seed = 1
        const sluice = yield* PriorityFleet.run({ seed })
        const perHost = yield* PriorityFleet.run({ seed, perLevel: false, order: "fifo" })
        const naive = yield* PriorityFleet.run({ seed, client: "naive" })
        // One state per host, oldest first: the loss this model reproduces.
        expect(perHost.goodputRatio).toBeLessThan(0.85)
        expect(perHost.goodputRatio).toBeLessThan(naive.goodputRatio)
        expect(perHost.wasted).toBeGreaterThan(perHost.ok)
        // The defaults: per level, newest first.
        expect(sluice.goodputRatio).toBeGreaterThanOrEqual(0.95)
        expect(sluice.goodputRatio).toBeGreaterThanOrEqual(naive.goodputRatio)
        expect(sluice.attemptsPerOperation).toBeLessThanOrEqual(0.5)
        expect(naive.attemptsPerOperation).toBeGreaterThan(2)
        expect(sluice.criticalSuccess).toBe(1)
        expect(sluice.wasted).toBeLessThan(sluice.ok / 10)
      }),
    60_000
  )

  it.effect("bad options fail with InvalidOptions naming the field", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(PriorityFleet.run({ slots: 0 }))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(String(exit)).toContain("slots")
    })
  )
})

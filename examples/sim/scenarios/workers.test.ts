import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runOne } from "../run.js"
import { findScenario } from "../scenarios.js"
import { runWorkers } from "./workers.js"

describe("workers scenario (simulation)", () => {
  it.effect("workers sharing a global sensor settle at the goal after each change", () =>
    Effect.gen(function* () {
      const r = yield* runWorkers({ seed: 1 })
      expect(r.goal).toBe(100)
      const [start, join, leave] = r.phases
      expect(start!.workersAfter).toBe(10)
      expect(join!.workersAfter).toBe(20)
      expect(leave!.workersAfter).toBe(10)
      for (const change of [join!, leave!]) {
        expect(change.settleSeconds).toBeDefined()
        expect(change.settlePeriods!).toBeLessThanOrEqual(5)
        expect(change.overshootPct).toBeLessThanOrEqual(10)
        expect(change.steadyErrorPct!).toBeLessThan(5)
      }
      expect(r.settleSeconds!).toBeLessThanOrEqual(5 * r.updatePeriodSeconds)
      // the goal really binds: 300–600 calls per second are offered, about 100 go out
      expect(r.sent / r.offered).toBeLessThan(0.4)
      const lastMinute = r.qps.slice(-60)
      expect(lastMinute.reduce((a, b) => a + b, 0) / 60).toBeCloseTo(100, -1)
    })
  )

  it.effect("the harder leave (the oldest workers, carrying most traffic) and the easy one both settle", () =>
    Effect.gen(function* () {
      for (const leaving of ["oldest", "newest"] as const) {
        const r = yield* runWorkers({ seed: 2, leaving, duration: "300 seconds" })
        expect(r.phases[2]!.settlePeriods!).toBeLessThanOrEqual(5)
        expect(r.phases[2]!.overshootPct).toBeLessThanOrEqual(10)
      }
    })
  )

  it.effect("is in the CLI registry; its JSON carries settleSeconds, overshootPct and steadyErrorPct", () =>
    Effect.gen(function* () {
      const scenario = findScenario("workers")!
      const run = yield* runOne(scenario, scenario.builtInStrategy!, { seed: 1 })
      expect(run.json.strategy).toBe("proportional-sampler")
      expect(run.json.settleSeconds).toBeLessThanOrEqual(25)
      expect(run.json.overshootPct).toBeLessThanOrEqual(10)
      expect(run.json.steadyErrorPct).toBeLessThan(5)
      expect(run.json.operations).toBe(144_000)
    })
  )
})

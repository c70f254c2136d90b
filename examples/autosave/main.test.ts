import { describe, expect, it } from "@effect/vitest"
import { Simulation } from "@sluice/simulation"
import { Effect, Exit } from "effect"
import { demo } from "./main.js"

describe("examples/autosave (smoke, in virtual time)", () => {
  it.effect("the back-pressure loop brings the saves down to the threshold and lets them back up", () =>
    Effect.gen(function* () {
      const run = yield* Simulation.run(demo({ seconds: 24, print: false }), { seed: 3 })
      expect(Exit.isSuccess(run.exit)).toBe(true)
      if (!Exit.isSuccess(run.exit)) return
      const r = run.exit.value
      const mean = (from: number, to: number) =>
        r.perSecond.slice(from, to).reduce((a, row) => a + row.saves, 0) / (to - from)
      expect(mean(1, r.onAtSecond)).toBeGreaterThan(45) // eight clients every ~137 ms
      const throttledPhase = mean(r.onAtSecond + 3, r.offAtSecond)
      expect(throttledPhase).toBeGreaterThan(0.75 * r.threshold)
      expect(throttledPhase).toBeLessThan(1.25 * r.threshold)
      expect(r.perSecond.slice(r.onAtSecond, r.offAtSecond).some((row) => row.throttled > 0)).toBe(true)
      expect(r.perSecond[r.onAtSecond + 4]!.meanIntervalMs).toBeGreaterThan(200)
      expect(r.fairness).toBeGreaterThan(0.95)
      expect(mean(r.offAtSecond + 4, 24)).toBeGreaterThan(45)
      expect(r.perSecond.slice(r.offAtSecond + 1).every((row) => row.throttled === 0)).toBe(true)
    })
  )
})

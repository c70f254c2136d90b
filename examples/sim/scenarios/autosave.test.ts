import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runOne } from "../run.js"
import { findScenario } from "../scenarios.js"
import { runAutosave } from "./autosave.js"

describe("autosave scenario (simulation)", () => {
  it.effect(
    "clients with AimdInterval hold the aggregate at the threshold, share it fairly, and recover",
    () =>
      Effect.gen(function* () {
        const r = yield* runAutosave({ seed: 1 })
        // unthrottled, the clients send about 14 saves per second
        expect(r.preferredQps).toBeGreaterThan(13)
        expect(r.preferredQps).toBeLessThan(15)
        // switched on at 60 s: within 60 s every 10 s bin up to 300 s is within ±10% of 6
        expect(r.settleSeconds).toBeDefined()
        expect(r.settleSeconds!).toBeLessThanOrEqual(60)
        for (let b = (60 + r.settleSeconds!) / r.binSeconds; b < 300 / r.binSeconds; b++) {
          expect(Math.abs(r.qps[b]! - 6)).toBeLessThanOrEqual(0.6 + 1e-9)
        }
        expect(r.overshootPct).toBeLessThanOrEqual(10 + 1e-9)
        expect(r.steadyErrorPct).toBeLessThan(5)
        expect(r.fairness).toBeGreaterThanOrEqual(0.99)
        expect(r.throttledResponses).toBeGreaterThan(0)
        // switched off at 300 s: back to the preferred rate
        expect(r.recoverySeconds).toBeDefined()
        expect(r.recoverySeconds!).toBeLessThanOrEqual(60)
        expect(r.recoveredQps).toBeGreaterThan(0.9 * r.preferredQps)
      })
  )

  it.effect(
    "the interval-step rule and a five-minute monitor window miss the goals (why the defaults differ)",
    () =>
      Effect.gen(function* () {
        const step = yield* runAutosave({ seed: 1, mode: "step" })
        expect(step.fairness).toBeLessThan(0.9)
        const slow = yield* runAutosave({ seed: 1, monitorWindow: "5 minutes", duration: "320 seconds" })
        expect(slow.settleSeconds).toBeUndefined()
        expect(slow.steadyQps).toBeLessThan(3)
      })
  )

  it.effect(
    "is in the CLI registry; its JSON carries settleSeconds, overshootPct, steadyErrorPct and fairness",
    () =>
      Effect.gen(function* () {
        const scenario = findScenario("autosave")!
        const run = yield* runOne(scenario, scenario.builtInStrategy!, { seed: 1 })
        expect(run.json.strategy).toBe("aimd-interval")
        expect(run.json.settleSeconds).toBeLessThanOrEqual(60)
        expect(run.json.overshootPct).toBeLessThanOrEqual(10)
        expect(run.json.steadyErrorPct).toBeLessThan(5)
        expect(run.json.fairness).toBeGreaterThanOrEqual(0.99)
      })
  )
})

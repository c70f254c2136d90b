import { AdaptiveThrottle } from "@sluice/adaptive"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { runOne } from "../run.js"
import { findScenario } from "../scenarios.js"
import { predictedShares, runThrottleScenario } from "./throttle.js"

// 50 requests/s for 480 virtual seconds, measured after two 2-minute windows:
// 12 000 measured requests. The backend accepts exactly a·N per second, so the
// only noise is the throttle's Bernoulli draws: the standard deviation of the
// throttled (and so of the backend-rejected) share is sqrt(p(1 − p) / 12 000)
// ≤ 0.0046. The tolerance 0.02 is more than 4 standard deviations.
const base = { offeredPerSecond: 50, durationSeconds: 480, warmupSeconds: 240, seed: 7 } as const
const TOLERANCE = 0.02

describe("throttle scenario (simulation)", () => {
  it.effect("with AdaptiveThrottle the backend-rejected share falls as the formula predicts", () =>
    Effect.gen(function* () {
      const report = yield* runThrottleScenario(base)
      // a = 0.3, K = 2: p* = 1 − K·a = 0.4; rejected at the backend (K − 1)·a = 0.3 instead of 0.7.
      const predicted = predictedShares(0.3, 2, 0.9)
      expect(predicted.throttled).toBeCloseTo(0.4, 12)
      expect(predicted.rejected).toBeCloseTo(0.3, 12)
      expect(report.predicted).toEqual(predicted)
      expect(report.steadyRequests).toBe(12_000)
      expect(Math.abs(report.steady.rejected - predicted.rejected)).toBeLessThan(TOLERANCE)
      expect(Math.abs(report.steady.throttled - predicted.throttled)).toBeLessThan(TOLERANCE)
      expect(report.steady.accepted).toBeCloseTo(0.3, 3)
      expect(report.steadyErrorPct).toBeLessThan((100 * TOLERANCE) / predicted.rejected)
      expect(
        Math.abs(report.finalProbability - AdaptiveThrottle.steadyStateProbability(0.3, 2))
      ).toBeLessThan(0.01)
      expect(report.steady.rejected).toBeLessThan(report.baselineRejectedShare - 0.3)
      // The probability gauge climbs from 0 and settles near p*.
      const probability = report.timeSeries.gauges.probability!
      expect(probability[0]).toBe(0)
      const late = probability.slice(300, 480)
      for (const p of late) expect(Math.abs(p - 0.4)).toBeLessThan(0.02)
    })
  )

  it.effect("without the throttle the same backend rejects 1 − a = 70% of requests", () =>
    Effect.gen(function* () {
      const report = yield* runThrottleScenario({
        ...base,
        throttle: false,
        durationSeconds: 60,
        warmupSeconds: 0
      })
      expect(report.steady.throttled).toBe(0)
      // Exact but for the last virtual second, which the 20 ms travel time cuts short.
      expect(Math.abs(report.steady.rejected - 0.7)).toBeLessThan(0.001)
      expect(report.steadyErrorPct).toBeLessThan(0.1)
    })
  )

  it.effect("SHEDDABLE traffic (K = 1.5) is throttled harder: 55% locally, 15% rejected by the backend", () =>
    Effect.gen(function* () {
      const report = yield* runThrottleScenario({ ...base, criticality: "SHEDDABLE" })
      expect(report.k).toBe(1.5)
      expect(Math.abs(report.steady.throttled - 0.55)).toBeLessThan(TOLERANCE)
      expect(Math.abs(report.steady.rejected - 0.15)).toBeLessThan(TOLERANCE)
    })
  )

  it.effect("is registered for the CLI: `--scenario throttle --json` reports steadyErrorPct", () =>
    Effect.gen(function* () {
      const scenario = findScenario("throttle")
      expect(scenario).toBeDefined()
      const run = yield* runOne(scenario!, scenario!.builtInStrategy!, { seed: 1 })
      expect(run.json.scenario).toBe("throttle")
      expect(run.json.strategy).toBe("adaptive-throttle")
      expect(run.json.operations).toBe(60_000)
      // 100/s for 600 s, 36 000 measured requests: sd of the rejected share ≈ 0.0026,
      // so 0.02 (6.7% of the predicted 0.3) is more than 7 standard deviations.
      expect(run.json.steadyErrorPct).toBeDefined()
      expect(run.json.steadyErrorPct!).toBeLessThan((100 * TOLERANCE) / 0.3)
      // Requests that reached the backend and were rejected, over all offered: about 30%, not 70%.
      expect(Math.abs(run.json.failedAttempts / run.json.operations - 0.3)).toBeLessThan(TOLERANCE)
      // What the adaptive READMEs (both lines) quote is what this run prints.
      const steady = (run.result.detail as { readonly steady: { readonly rejected: number } }).steady
      for (const path of ["packages/adaptive/README.md", "effect3/packages/adaptive/README.md"]) {
        const readme = readFileSync(new URL(`../../../${path}`, import.meta.url), "utf8").replace(/\s+/g, " ")
        const quoted =
          /share ([\d.]+)% of all requests and ([\d.]+)% after the first 240 s .*?`steadyErrorPct` ([\d.]+) with seed 1/.exec(
            readme
          )
        expect(quoted, path).not.toBeNull()
        expect(quoted!.slice(1).map(Number), path).toEqual([
          Number(((100 * run.json.failedAttempts) / run.json.operations).toFixed(1)),
          Number((100 * steady.rejected).toFixed(1)),
          run.json.steadyErrorPct
        ])
      }
    })
  )
})

/**
 * Runs one scenario with one strategy and shapes the CLI's JSON line.
 */
import { Effect } from "effect"
import type { Scenario, ScenarioResult } from "./workload.js"
import type { Strategy } from "@sluice/simulation/Strategy"

/** The CLI's `--json` object. */
export interface SimJson {
  readonly scenario: string
  readonly strategy: string
  readonly operations: number
  readonly succeeded: number
  readonly attempts: number
  readonly failedAttempts: number
  readonly completionSeconds: number
  readonly optimalSeconds: number
  readonly fairness?: number
  readonly settleSeconds?: number
  readonly overshootPct?: number
  readonly steadyErrorPct?: number
  readonly wallMs: number
}

export interface SimRun {
  readonly scenario: Scenario
  readonly strategy: Strategy
  readonly result: ScenarioResult
  readonly wallMs: number
  readonly json: SimJson
}

const round = (x: number, digits: number): number => Math.round(x * 10 ** digits) / 10 ** digits

export const runOne = (
  scenario: Scenario,
  strategy: Strategy,
  options: { readonly seed?: number; readonly onProgress?: (elapsedMillis: number) => void } = {}
): Effect.Effect<SimRun, unknown> =>
  Effect.suspend(() => {
    const started = performance.now()
    return Effect.map(
      scenario.run(strategy, { seed: options.seed ?? 1, onProgress: options.onProgress }),
      (result) => {
        const wallMs = round(performance.now() - started, 1)
        const json: SimJson = {
          scenario: scenario.name,
          strategy: strategy.name,
          operations: result.operations,
          succeeded: result.succeeded,
          attempts: result.attempts,
          failedAttempts: result.failedAttempts,
          completionSeconds: round(result.completionMillis / 1000, 3),
          optimalSeconds: round(result.optimalMillis / 1000, 3),
          ...(result.fairness !== undefined ? { fairness: round(result.fairness, 4) } : {}),
          ...(result.settleSeconds !== undefined ? { settleSeconds: round(result.settleSeconds, 3) } : {}),
          ...(result.overshootPct !== undefined ? { overshootPct: round(result.overshootPct, 2) } : {}),
          ...(result.steadyErrorPct !== undefined ? { steadyErrorPct: round(result.steadyErrorPct, 2) } : {}),
          wallMs
        }
        return { scenario, strategy, result, wallMs, json }
      }
    )
  })

/**
 * The part of the simulation examples that runs anywhere (Node or a browser, no file
 * system): what a scenario reports, and a scenario that drives a `Simulation.Scenario`.
 * The CLI, the demo and the playground's Web Worker all run scenarios through this.
 */
import type { Options } from "@sluice/core"
import { Simulation } from "@sluice/simulation"
import type { Strategy } from "@sluice/simulation/Strategy"
import { Effect } from "effect"

/** What every scenario reports (times in virtual milliseconds). */
export interface ScenarioResult {
  readonly operations: number
  readonly succeeded: number
  readonly attempts: number
  readonly failedAttempts: number
  readonly completionMillis: number
  readonly optimalMillis: number
  /** Jain's index of per-client goodput, for scenarios with several clients. */
  readonly fairness?: number | undefined
  /** Control-loop scenarios: seconds until the measured rate settles, worst overshoot and steady error (percent). */
  readonly settleSeconds?: number | undefined
  readonly overshootPct?: number | undefined
  readonly steadyErrorPct?: number | undefined
  readonly timeSeries: Simulation.TimeSeries
  /** The scenario's own full report, for tests and charts. */
  readonly detail: unknown
}

export interface Scenario {
  readonly name: string
  readonly description: string
  /** A scenario that builds its own clients names them here; `--strategy` is then not needed. */
  readonly builtInStrategy?: Strategy | undefined
  readonly run: (
    strategy: Strategy,
    options: Simulation.RunOptions
  ) => Effect.Effect<ScenarioResult, Options.InvalidOptions>
}

/** A scenario that drives a `Simulation.Scenario` (one slot server, open-loop arrivals). */
export const workloadScenario = (
  workload: Simulation.Scenario,
  reportFairness = (workload.clients ?? 1) > 1
): Scenario => ({
  name: workload.name,
  description: workload.description ?? "",
  run: (strategy, options) =>
    Effect.map(Simulation.runScenario(workload, strategy.make, options), (report) => ({
      operations: report.operations,
      succeeded: report.succeeded,
      attempts: report.attempts,
      failedAttempts: report.failedAttempts,
      completionMillis: report.completionMillis,
      optimalMillis: report.optimalMillis,
      fairness: reportFairness ? report.fairness : undefined,
      timeSeries: report.timeSeries,
      detail: report
    }))
})

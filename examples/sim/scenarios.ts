/**
 * Scenarios the simulation CLI and demo know, by name. A scenario runs one strategy
 * in virtual time and reports the common figures; the three built-in ones (and any
 * scenario read from a JSON file) drive a `Simulation.Scenario` against a slot server. To add a scenario of another shape
 * (periodic work, workers, a throttled backend), add an entry whose `run` builds its
 * own program with `Simulation.run` and returns a {@link ScenarioResult}.
 */
import type { Options } from "@sluice/core"
import { Simulation } from "@sluice/simulation"
import type { Strategy } from "@sluice/simulation/Strategy"
import { Effect } from "effect"
import { readFile } from "node:fs/promises"
import { autosaveScenario } from "./scenarios/autosave.js"
import { throttleScenario } from "./scenarios/throttle.js"
import { workersScenario } from "./scenarios/workers.js"

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

export const scenarios: ReadonlyArray<Scenario> = [
  workloadScenario(Simulation.overload2000),
  workloadScenario(Simulation.capacityDrop),
  workloadScenario(Simulation.manyClients),
  autosaveScenario,
  workersScenario,
  throttleScenario
]

export const scenarioNames = (): ReadonlyArray<string> => scenarios.map((s) => s.name)

export const findScenario = (name: string): Scenario | undefined => scenarios.find((s) => s.name === name)

/** A scenario written as JSON in a file (a `Simulation.Scenario`), validated. */
export const loadScenarioFile = (path: string): Effect.Effect<Scenario, Options.InvalidOptions | Error> =>
  Effect.flatMap(
    Effect.tryPromise({
      try: () => readFile(path, "utf8"),
      catch: (error) => new Error(`cannot read scenario file ${path}: ${String(error)}`)
    }),
    (text) => Effect.map(Simulation.parseScenarioJson(text), (scenario) => workloadScenario(scenario))
  )

/** A built-in scenario's name, or a path to a JSON file (anything ending in `.json`). */
export const resolveScenario = (
  nameOrPath: string
): Effect.Effect<Scenario | undefined, Options.InvalidOptions | Error> =>
  nameOrPath.endsWith(".json") ? loadScenarioFile(nameOrPath) : Effect.succeed(findScenario(nameOrPath))

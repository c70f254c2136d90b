/**
 * Scenarios the simulation CLI and demo know, by name. A scenario runs one strategy
 * in virtual time and reports the common figures; the three built-in ones (and any
 * scenario read from a JSON file) drive a `Simulation.Scenario` against a slot server. To add a scenario of another shape
 * (periodic work, workers, a throttled backend), add an entry whose `run` builds its
 * own program with `Simulation.run` and returns a {@link ScenarioResult}.
 */
import type { Options } from "@sluice/core"
import { Simulation } from "@sluice/simulation"
import { Effect } from "effect"
import { readFile } from "node:fs/promises"
import { autosaveScenario } from "./scenarios/autosave.js"
import { throttleScenario } from "./scenarios/throttle.js"
import { workersScenario } from "./scenarios/workers.js"
import { workloadScenario, type Scenario } from "./workload.js"

export { workloadScenario, type Scenario, type ScenarioResult } from "./workload.js"

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

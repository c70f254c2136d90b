/** Messages between the page and the simulation worker. */
import type { Series } from "@sluice/simulation"
import type { SimJson } from "../../examples/sim/run.js"

export interface RunRequest {
  readonly type: "run"
  readonly id: number
  /** The scenario as JSON text, validated in the worker exactly as the CLI validates a scenario file. */
  readonly scenarioJson: string
  readonly strategies: ReadonlyArray<string>
  /** Changed options per strategy (see options.ts); a strategy without any is the built-in. */
  readonly options: Readonly<Record<string, Readonly<Record<string, number>>>>
  readonly seed: number
}

/** What one finished strategy sends back: the CLI's JSON line and the chart points. */
export interface StrategyResult {
  readonly json: SimJson
  readonly attempts: ReadonlyArray<Series.Point>
  readonly successes: ReadonlyArray<Series.Point>
  readonly cwnd: ReadonlyArray<Series.Point>
}

export type WorkerMessage =
  | { readonly type: "invalid"; readonly id: number; readonly message: string }
  | {
      readonly type: "progress"
      readonly id: number
      readonly strategy: string
      readonly virtualMillis: number
    }
  | { readonly type: "result"; readonly id: number; readonly result: StrategyResult }
  | { readonly type: "done"; readonly id: number; readonly wallMs: number }
  | { readonly type: "failed"; readonly id: number; readonly message: string }

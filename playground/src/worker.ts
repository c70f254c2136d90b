/**
 * The simulation, off the page's thread: the same `@sluice/simulation` code and the same
 * runner as `npm run demo` and `npm run sim`, so a scenario, strategy and seed give the
 * CLI's numbers.
 */
import { Series, Simulation } from "@sluice/simulation"
import { Effect } from "effect"
import { runOne } from "../../examples/sim/run.js"
import { workloadScenario } from "../../examples/sim/workload.js"
import { strategyWith } from "./options.js"
import type { RunRequest, WorkerMessage } from "./protocol.js"

/** The part of a dedicated worker's scope used here (the page's DOM types describe `self` as a window). */
interface WorkerScope {
  postMessage(message: WorkerMessage): void
  onmessage: ((event: MessageEvent<RunRequest>) => void) | null
}
const scope = globalThis as unknown as WorkerScope

const post = (message: WorkerMessage) => scope.postMessage(message)

/** Progress is a hint for the page; one message per ~50 ms of wall time is plenty. */
const PROGRESS_EVERY_MS = 50

const run = async (request: RunRequest) => {
  const { id } = request
  const parsed = await Effect.runPromise(Effect.result(Simulation.parseScenarioJson(request.scenarioJson)))
  if (parsed._tag === "Failure") {
    post({ type: "invalid", id, message: parsed.failure.message })
    return
  }
  const scenario = workloadScenario(parsed.success)
  const started = performance.now()
  for (const name of request.strategies) {
    const strategy = strategyWith(name, request.options[name] ?? {})
    if (strategy === undefined) {
      post({ type: "failed", id, message: `unknown strategy "${name}"` })
      return
    }
    let lastPost = 0
    const onProgress = (virtualMillis: number) => {
      const now = performance.now()
      if (now - lastPost < PROGRESS_EVERY_MS) return
      lastPost = now
      post({ type: "progress", id, strategy: name, virtualMillis })
    }
    const outcome = await Effect.runPromise(
      Effect.result(runOne(scenario, strategy, { seed: request.seed, onProgress }))
    )
    if (outcome._tag === "Failure") {
      const error = outcome.failure
      post({ type: "failed", id, message: error instanceof Error ? error.message : String(error) })
      return
    }
    const r = outcome.success
    const runs = [{ strategy: name, timeSeries: r.result.timeSeries }]
    post({
      type: "result",
      id,
      result: {
        json: r.json,
        attempts: Series.ratePoints(runs, "attempts"),
        successes: Series.ratePoints(runs, "successes"),
        cwnd: Series.gaugePoints(runs, "cwnd")
      }
    })
  }
  post({ type: "done", id, wallMs: performance.now() - started })
}

scope.onmessage = (event: MessageEvent<RunRequest>) => {
  run(event.data).catch((error: unknown) =>
    post({
      type: "failed",
      id: event.data.id,
      message: error instanceof Error ? error.message : String(error)
    })
  )
}

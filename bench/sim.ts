/**
 * How fast the simulation engine runs: virtual time should cost milliseconds of wall time.
 *
 *   npm run bench:sim            # full: exponential on overload-2000 (3 runs) + the whole demo
 *   npm run bench:sim -- --short # a small workload, for the smoke test
 *   npm run bench:sim -- --json  # the same (the output is always one JSON object)
 *
 * `tempoGoals` (full mode) has the rate-paced controller's goals (examples/sim/goals.ts) for seeds
 * 1–5: overload-2000, capacity-drop, many-clients and the variants against cwnd-reno.
 * Prints one JSON object. Targets: exponential on overload-2000 under 2 s wall,
 * the whole demo under 20 s. Wall time depends on what else the machine runs, so the
 * process CPU time and the load average are reported next to it.
 */
import { Simulation, Strategy } from "@sluice/simulation"
import * as Charts from "@sluice/simulation/Charts"
import { Effect } from "effect"
import { cpus, loadavg } from "node:os"
import { measureGoals, type GoalReport } from "../examples/sim/goals.js"
import { runOne, type SimRun } from "../examples/sim/run.js"
import { findScenario, workloadScenario, type Scenario } from "../examples/sim/scenarios.js"

const strategies = Strategy.builtIns
const findStrategy = (name: string) => strategies.find((s) => s.name === name)

const short = process.argv.includes("--short")

const round = (x: number) => Math.round(x * 10) / 10
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const cpuMs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since)
  return round((used.user + used.system) / 1000)
}

const timed = async <A>(f: () => Promise<A>) => {
  const cpu = process.cpuUsage()
  const started = performance.now()
  const value = await f()
  return { value, wallMs: round(performance.now() - started), cpuMs: cpuMs(cpu) }
}

const main = async () => {
  const scenario: Scenario = short
    ? workloadScenario({ ...Simulation.overload2000, name: "overload-200", operationsPerClient: 200 })
    : findScenario("overload-2000")!
  const repeats = short ? 1 : 3

  const exponentialRuns: Array<{ wallMs: number; cpuMs: number; run: SimRun }> = []
  for (let i = 0; i < repeats; i++) {
    const { cpuMs, value, wallMs } = await timed(() =>
      Effect.runPromise(runOne(scenario, findStrategy("exponential")!, { seed: 1 }))
    )
    exponentialRuns.push({ wallMs, cpuMs, run: value })
  }
  const first = exponentialRuns[0]!.run

  const demo = await timed(async () => {
    const runs: Array<SimRun> = []
    const perStrategy: Array<Record<string, unknown>> = []
    for (const strategy of strategies) {
      const { cpuMs, value, wallMs } = await timed(() =>
        Effect.runPromise(runOne(scenario, strategy, { seed: 1 }))
      )
      runs.push(value)
      perStrategy.push({
        strategy: strategy.name,
        attempts: value.json.attempts,
        virtualSeconds: value.json.completionSeconds,
        wallMs,
        cpuMs
      })
    }
    const charts = await timed(async () => {
      const chartRuns = runs.map((r) => ({ strategy: r.strategy.name, timeSeries: r.result.timeSeries }))
      for (const spec of Object.values(Charts.demoCharts(scenario.name, chartRuns)))
        await Charts.renderSvg(spec)
    })
    return { perStrategy, chartsWallMs: charts.wallMs }
  })

  const goals: Array<GoalReport> = []
  const goalsTimed = await timed(async () => {
    if (short) return
    for (const seed of [1, 2, 3, 4, 5]) goals.push(await Effect.runPromise(measureGoals(seed)))
  })

  const exponentialMedian = median(exponentialRuns.map((r) => r.wallMs))
  const result = {
    benchmark: "sim",
    mode: short ? "short" : "full",
    scenario: scenario.name,
    node: process.version,
    cpus: cpus().length,
    loadAverage1m: round(loadavg()[0]!),
    exponential: {
      attempts: first.json.attempts,
      virtualSeconds: first.json.completionSeconds,
      runs: exponentialRuns.length,
      wallMs: exponentialRuns.map((r) => r.wallMs),
      cpuMs: exponentialRuns.map((r) => r.cpuMs),
      medianWallMs: exponentialMedian,
      attemptsPerWallSecond: Math.round((first.json.attempts * 1000) / exponentialMedian),
      virtualSecondsPerWallSecond: round((first.json.completionSeconds * 1000) / exponentialMedian),
      // the targets are for overload-2000; the short mode only checks the shape
      targetMs: 2000,
      withinTarget: short ? null : exponentialMedian < 2000
    },
    demo: {
      strategies: demo.value.perStrategy,
      chartsWallMs: demo.value.chartsWallMs,
      totalWallMs: demo.wallMs,
      totalCpuMs: demo.cpuMs,
      targetMs: 20000,
      withinTarget: short ? null : demo.wallMs < 20000
    },
    tempoGoals: short
      ? null
      : {
          seeds: goals.map((g) => g.seed),
          allMet: goals.every(
            (g) =>
              g.overload2000.met && g.capacityDrop.met && g.manyClients.met && g.variants.every((v) => v.met)
          ),
          wallMs: goalsTimed.wallMs,
          perSeed: goals
        }
  }
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})

import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { demoCharts, renderSvg } from "./charts.js"
import { runOne, type SimRun } from "./run.js"
import { findScenario, scenarioNames } from "./scenarios.js"
import { findStrategy, strategyNames } from "./strategies.js"

const simulate = (scenario: string, strategy: string, seed = 1): Effect.Effect<SimRun, unknown> =>
  runOne(findScenario(scenario)!, findStrategy(strategy)!, { seed })

const efficiency = (run: SimRun) => (run.json.attempts - run.json.failedAttempts) / run.json.attempts
const ratio = (run: SimRun) => run.result.completionMillis / run.result.optimalMillis

describe("simulation scenarios and strategies", () => {
  it("registers the scenarios and strategies of the issue", () => {
    // other scenarios and strategies may be registered after these
    expect(scenarioNames().slice(0, 3)).toEqual(["overload-2000", "capacity-drop", "many-clients"])
    expect(strategyNames()).toEqual(
      expect.arrayContaining([
        "naive",
        "exponential",
        "exponential-budget",
        "cwnd-tahoe",
        "cwnd-reno",
        "aimd"
      ])
    )
  })

  it.effect(
    "exponential backoff on overload-2000 shows the pathology",
    () =>
      Effect.gen(function* () {
        const run = yield* simulate("overload-2000", "exponential")
        expect(run.json.succeeded).toBe(2000)
        expect(efficiency(run)).toBeLessThan(0.5)
        expect(ratio(run)).toBeGreaterThan(1.5)
      }),
    60_000
  )

  it.effect("cwnd-reno on overload-2000 keeps failed attempts low and finishes well before exponential", () =>
    Effect.gen(function* () {
      const run = yield* simulate("overload-2000", "cwnd-reno")
      expect(run.json.succeeded).toBe(2000)
      expect(run.json.failedAttempts).toBeLessThanOrEqual(0.05 * run.json.operations)
      expect(efficiency(run)).toBeGreaterThan(0.95)
      expect(ratio(run)).toBeLessThanOrEqual(1.3)
      // the window is recorded as a gauge and stays near the server's 50 slots
      const cwnd = run.result.timeSeries.gauges.cwnd ?? []
      const late = cwnd.slice(50).filter(Number.isFinite)
      expect(Math.min(...late)).toBeGreaterThan(40)
      expect(Math.max(...late)).toBeLessThan(60)
    })
  )

  it.effect("cwnd-reno on capacity-drop follows the capacity down and up", () =>
    Effect.gen(function* () {
      const run = yield* simulate("capacity-drop", "cwnd-reno")
      expect(run.json.succeeded).toBe(4000)
      expect(run.json.optimalSeconds).toBeCloseTo(52.149, 3)
      expect(ratio(run)).toBeLessThanOrEqual(1.3)
      const series = run.result.timeSeries
      const cwndAt = (seconds: number) =>
        series.gauges.cwnd![Math.round((seconds * 1000) / series.resolutionMillis)]!
      expect(cwndAt(25)).toBeLessThan(30) // capacity is 20 between 10 s and 30 s
      expect(cwndAt(9)).toBeGreaterThan(40)
    })
  )

  it.effect("many-clients with cwnd-reno shares the server fairly", () =>
    Effect.gen(function* () {
      const run = yield* simulate("many-clients", "cwnd-reno")
      expect(run.json.succeeded).toBe(3000)
      expect(run.json.fairness).toBeGreaterThanOrEqual(0.95)
    })
  )

  it.effect("a run is reproducible from its seed", () =>
    Effect.gen(function* () {
      const a = yield* simulate("overload-2000", "exponential-budget", 5)
      const b = yield* simulate("overload-2000", "exponential-budget", 5)
      const { wallMs: _a, ...ja } = a.json
      const { wallMs: _b, ...jb } = b.json
      expect(ja).toEqual(jb)
      expect(a.result.timeSeries).toEqual(b.result.timeSeries)
      // the budget lets few retries through: most operations fail fast
      expect(a.json.succeeded).toBeLessThan(a.json.operations)
      expect(a.json.attempts).toBeLessThan(1.2 * a.json.operations)
    })
  )

  it.effect("renders the charts as SVG", () =>
    Effect.gen(function* () {
      const run = yield* simulate("overload-2000", "cwnd-tahoe")
      const charts = demoCharts("overload-2000", [run])
      expect(Object.keys(charts)).toEqual([
        "overload-2000-request-rate.svg",
        "overload-2000-request-rate-log.svg",
        "overload-2000-goodput.svg",
        "overload-2000-cwnd.svg"
      ])
      const svg = yield* Effect.promise(() => renderSvg(charts["overload-2000-cwnd.svg"]!))
      expect(svg.startsWith("<svg")).toBe(true)
      expect(svg).toContain("cwnd-tahoe")
      expect(svg).toContain("<path")
    })
  )

  it.effect(
    "the CLI prints exactly one JSON object with --json",
    () =>
      Effect.gen(function* () {
        const { stdout } = yield* Effect.promise(() =>
          promisify(execFile)(
            "npx",
            [
              "tsx",
              "--conditions=@sluice/source",
              "examples/sim/cli.ts",
              "--scenario",
              "many-clients",
              "--strategy",
              "exponential-budget",
              "--seed",
              "3",
              "--json"
            ],
            { cwd: new URL("../..", import.meta.url).pathname }
          )
        )
        const lines = stdout.trim().split("\n")
        expect(lines).toHaveLength(1)
        const json = JSON.parse(lines[0]!)
        expect(Object.keys(json)).toEqual([
          "scenario",
          "strategy",
          "operations",
          "succeeded",
          "attempts",
          "failedAttempts",
          "completionSeconds",
          "optimalSeconds",
          "fairness",
          "wallMs"
        ])
        expect(json.scenario).toBe("many-clients")
        expect(json.strategy).toBe("exponential-budget")
        expect(json.operations).toBe(3000)
        expect(json.optimalSeconds).toBeCloseTo(30.149, 3)
      }),
    120_000
  )
})

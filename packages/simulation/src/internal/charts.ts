/**
 * SVG charts of simulation runs, rendered headless with vega-lite + vega.
 */
import * as vega from "vega"
import * as vl from "vega-lite"
import type { TopLevelSpec } from "vega-lite"
import type { ChartRun } from "../Charts.js"
import { gaugePoints, ratePoints, type Point } from "../Series.js"

const lineChart = (options: {
  readonly title: string
  readonly subtitle?: string
  readonly yTitle: string
  readonly points: ReadonlyArray<Point>
  readonly order: ReadonlyArray<string>
  readonly log?: boolean
  readonly step?: boolean
}): TopLevelSpec => ({
  $schema: "https://vega.github.io/schema/vega-lite/v6.json",
  title: { text: options.title, ...(options.subtitle ? { subtitle: options.subtitle } : {}) },
  width: 760,
  height: 340,
  background: "white",
  padding: 12,
  data: { values: options.log ? options.points.filter((p) => p.value > 0) : [...options.points] },
  mark: { type: "line", strokeWidth: 1.6, interpolate: options.step ? "step-after" : "linear" },
  encoding: {
    x: { field: "t", type: "quantitative", title: "virtual time (s)" },
    y: {
      field: "value",
      type: "quantitative",
      title: options.yTitle,
      scale: options.log ? { type: "log" } : { zero: true }
    },
    color: {
      field: "strategy",
      type: "nominal",
      sort: [...options.order],
      // The same domain in every chart keeps each strategy's colour.
      scale: { domain: [...options.order], scheme: "tableau10" },
      legend: { orient: "right", title: "strategy" }
    }
  },
  config: { font: "Helvetica, Arial, sans-serif", axis: { grid: true, gridOpacity: 0.4 } }
})

/** Renders a vega-lite spec to an SVG string. */
/** @internal */
export const renderSvg = async (spec: TopLevelSpec): Promise<string> => {
  const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: "none" })
  try {
    return await view.toSVG()
  } finally {
    view.finalize()
  }
}

/** The demo's charts: file name to vega-lite spec. */
/** @internal */
export const demoCharts = (scenario: string, runs: ReadonlyArray<ChartRun>): Record<string, TopLevelSpec> => {
  const order = runs.map((r) => r.strategy)
  const attempts = ratePoints(runs, "attempts")
  return {
    [`${scenario}-request-rate.svg`]: lineChart({
      title: `${scenario}: attempts per second`,
      subtitle: "requests each strategy sends to the model server (1 s bins)",
      yTitle: "attempts / s",
      points: attempts,
      order
    }),
    [`${scenario}-request-rate-log.svg`]: lineChart({
      title: `${scenario}: attempts per second (log scale)`,
      subtitle: "a retry storm is orders of magnitude above the server's 100/s capacity",
      yTitle: "attempts / s (log)",
      points: attempts,
      order,
      log: true
    }),
    [`${scenario}-goodput.svg`]: lineChart({
      title: `${scenario}: successful attempts per second`,
      subtitle: "the server can complete at most 100/s",
      yTitle: "successes / s",
      points: ratePoints(runs, "successes"),
      order
    }),
    [`${scenario}-cwnd.svg`]: lineChart({
      title: `${scenario}: concurrency limit over time`,
      subtitle: "congestion window / AIMD limit of the adaptive strategies",
      yTitle: "limit (requests in flight)",
      points: gaugePoints(runs, "cwnd"),
      order,
      step: true
    })
  }
}

/**
 * A run's time series as chart points, without any drawing library: per-second rates
 * of a counter and the samples of a gauge, labelled by strategy. {@link Charts} draws
 * these points with vega; the browser playground plots the same points as plain SVG.
 *
 * **Details**: counters are summed into bins (1 s by default) and divided by the
 * bin's length, so a point is "events per second during the bin starting at `t`".
 *
 * **Gotchas**: gauge samples before the gauge was registered are `NaN` in the time
 * series and are left out here, so a strategy without a window has no `cwnd` points.
 *
 * @since 1.0.0
 */
import type * as Simulation from "./Simulation.js"

/**
 * One chart point: the strategy it belongs to, virtual seconds since the start, the value.
 *
 * @since 1.0.0
 * @category models
 */
export interface Point {
  readonly strategy: string
  readonly t: number
  readonly value: number
}

/**
 * One run to plot: the strategy's name (the line's label) and its time series.
 *
 * @since 1.0.0
 * @category models
 */
export interface SeriesRun {
  readonly strategy: string
  readonly timeSeries: Simulation.TimeSeries
}

/**
 * A counter as a rate per second, summed into bins of `binMillis` (default 1000).
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import type { Simulation } from "@sluice/simulation"
 * import { Series } from "@sluice/simulation"
 *
 * declare const timeSeries: Simulation.TimeSeries
 * const attemptsPerSecond = Series.ratePoints([{ strategy: "tempo", timeSeries }], "attempts")
 * ```
 * @since 1.0.0
 * @category points
 */
export const ratePoints = (
  runs: ReadonlyArray<SeriesRun>,
  counter: string,
  binMillis = 1000
): Array<Point> => {
  const points: Array<Point> = []
  for (const run of runs) {
    const ts = run.timeSeries
    const values = ts.counters[counter] ?? []
    const perBin = Math.max(1, Math.round(binMillis / ts.resolutionMillis))
    for (let i = 0; i < values.length; i += perBin) {
      let sum = 0
      for (let j = i; j < Math.min(values.length, i + perBin); j++) sum += values[j]!
      points.push({
        strategy: run.strategy,
        t: ts.times[i]! / 1000,
        value: (sum * 1000) / (perBin * ts.resolutionMillis)
      })
    }
  }
  return points
}

/**
 * A gauge's samples (for example `cwnd`, the concurrency limit), for the runs that recorded it.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import type { Simulation } from "@sluice/simulation"
 * import { Series } from "@sluice/simulation"
 *
 * declare const timeSeries: Simulation.TimeSeries
 * const limit = Series.gaugePoints([{ strategy: "cwnd-reno", timeSeries }], "cwnd")
 * ```
 * @since 1.0.0
 * @category points
 */
export const gaugePoints = (runs: ReadonlyArray<SeriesRun>, gauge: string): Array<Point> => {
  const points: Array<Point> = []
  for (const run of runs) {
    const ts = run.timeSeries
    const values = ts.gauges[gauge]
    if (values === undefined) continue
    values.forEach((value, i) => {
      if (Number.isFinite(value)) points.push({ strategy: run.strategy, t: ts.times[i]! / 1000, value })
    })
  }
  return points
}

/**
 * A run's time series as chart points; no drawing library, so a browser page can
 * plot the same numbers the SVG charts show.
 */
import type * as Simulation from "../Simulation.js"

/** @internal */
export interface Point {
  readonly strategy: string
  readonly t: number
  readonly value: number
}

/** @internal */
export interface SeriesRun {
  readonly strategy: string
  readonly timeSeries: Simulation.TimeSeries
}

/** Sums a counter into `binMillis` bins and turns it into a per-second rate. */
/** @internal */
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

/** A gauge's samples, for the runs that recorded it. */
/** @internal */
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

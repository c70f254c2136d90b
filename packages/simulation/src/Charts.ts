/**
 * SVG charts of simulation runs, rendered headless with vega-lite and vega: the
 * demo's request rate (linear and log scale), goodput and concurrency limit per
 * strategy.
 *
 * **Gotchas**: this module is a subpath of its own (`@sluice/simulation/Charts`), not
 * part of the package's entry: vega-lite's declarations do not typecheck in an app with
 * `exactOptionalPropertyTypes` and without `skipLibCheck`, so only an app that draws
 * charts meets them. {@link Series} gives the same points without vega.
 *
 * @since 0.1.0
 */
import type { TopLevelSpec } from "vega-lite"
import * as internal from "./internal/charts.js"
import type * as Simulation from "./Simulation.js"

/**
 * One run to draw: the strategy's name (the line's label) and its time series.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChartRun {
  readonly strategy: string
  readonly timeSeries: Simulation.TimeSeries
}

/**
 * A vega-lite specification (the type of `vega-lite`).
 *
 * @since 0.1.0
 * @category models
 */
export type Spec = TopLevelSpec

/**
 * The demo's charts, file name to spec: `<scenario>-request-rate.svg`,
 * `<scenario>-request-rate-log.svg`, `<scenario>-goodput.svg`, `<scenario>-cwnd.svg`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import * as Charts from "@sluice/simulation/Charts"
 * import type { Simulation } from "@sluice/simulation"
 *
 * declare const timeSeries: Simulation.TimeSeries
 * const specs = Charts.demoCharts("overload-2000", [{ strategy: "cwnd-reno", timeSeries }])
 * Object.keys(specs) // ["overload-2000-request-rate.svg", ...]
 * ```
 * @since 0.1.0
 * @category charts
 */
export const demoCharts: (scenario: string, runs: ReadonlyArray<ChartRun>) => Record<string, Spec> =
  internal.demoCharts

/**
 * Renders a vega-lite spec to an SVG string.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import * as Charts from "@sluice/simulation/Charts"
 *
 * declare const spec: Charts.Spec
 * const svg: Promise<string> = Charts.renderSvg(spec)
 * ```
 * @since 0.1.0
 * @category charts
 */
export const renderSvg: (spec: Spec) => Promise<string> = internal.renderSvg

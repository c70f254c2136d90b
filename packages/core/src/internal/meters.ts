import * as Context from "effect/Context"
import * as Metric from "effect/Metric"
import type * as M from "../Meters.js"

const family = <A>(metric: A, make: (attributes: Metric.Metric.AttributeSet) => A): M.Family<A> => ({
  metric,
  of: (attributes) => (attributes === undefined ? metric : make(attributes))
})

/** @internal */
export const counter = (name: string, description: string): M.Family<Metric.Counter<number>> =>
  family(Metric.counter(name, { description, incremental: true }), (attributes) =>
    Metric.counter(name, { description, incremental: true, attributes })
  )

/** @internal */
export const gauge = (name: string, description: string): M.Family<Metric.Gauge<number>> =>
  family(Metric.gauge(name, { description }), (attributes) => Metric.gauge(name, { description, attributes }))

/** @internal */
export const histogram = (
  name: string,
  description: string,
  boundaries: ReadonlyArray<number>
): M.Family<Metric.Histogram<number>> =>
  family(Metric.histogram(name, { description, boundaries }), (attributes) =>
    Metric.histogram(name, { description, boundaries, attributes })
  )

/** @internal */
export const metricContext = (context: Context.Context<never>): Context.Context<never> =>
  Context.makeUnsafe(
    new Map<string, unknown>([
      [Metric.MetricRegistry.key, Context.get(context, Metric.MetricRegistry)],
      [Metric.CurrentMetricAttributes.key, Context.get(context, Metric.CurrentMetricAttributes)]
    ])
  )

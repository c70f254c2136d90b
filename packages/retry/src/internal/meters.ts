import * as Context from "effect/Context"
import * as Metric from "effect/Metric"

/**
 * @internal What a counter's update reads from a context, and nothing else: its
 * `MetricRegistry` and its `CurrentMetricAttributes`, as `context` holds them. An update in
 * it finds the same series in the same registry as in `context`, with two direct hits
 * instead of two lookups that fall through to the References' defaults.
 */
export const metricContext = (context: Context.Context<never>): Context.Context<never> =>
  Context.makeUnsafe(
    new Map<string, unknown>([
      [Metric.MetricRegistry.key, Context.get(context, Metric.MetricRegistry)],
      [Metric.CurrentMetricAttributes.key, Context.get(context, Metric.CurrentMetricAttributes)]
    ])
  )

/**
 * @internal `base` with `attributes` added, as one metric built up front: the same series as
 * `Metric.withAttributes(base, attributes)` (same id, description and attributes), but an
 * update finds it without building a context to merge the attributes in. `undefined` adds none.
 */
export const counterWith = (
  base: Metric.Counter<number>,
  attributes: Metric.Metric.AttributeSet | undefined
): Metric.Counter<number> =>
  attributes === undefined
    ? base
    : Metric.counter(base.id, {
        description: base.description,
        incremental: true,
        attributes: { ...base.attributes, ...attributes }
      })

/** @internal the gauge counterpart of {@link counterWith} */
export const gaugeWith = (
  base: Metric.Gauge<number>,
  attributes: Metric.Metric.AttributeSet | undefined
): Metric.Gauge<number> =>
  attributes === undefined
    ? base
    : Metric.gauge(base.id, {
        description: base.description,
        attributes: { ...base.attributes, ...attributes }
      })

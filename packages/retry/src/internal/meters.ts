import * as Metric from "effect/Metric"

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

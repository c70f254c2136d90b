import * as Context from "effect/Context"
import * as Metric from "effect/Metric"
import type * as M from "../shared/Meters.js"

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

type Registry = Metric.MetricRegistry
type Metadata = Metric.Metric.Metadata<any, any>
type AttributeSet = Metric.Metric.AttributeSet

const recordOf = (attributes: AttributeSet | undefined): Readonly<Record<string, string>> =>
  attributes === undefined
    ? {}
    : Array.isArray(attributes)
      ? Object.fromEntries(attributes as ReadonlyArray<readonly [string, string]>)
      : (attributes as Readonly<Record<string, string>>)

const sameAttributes = (a: AttributeSet | undefined, b: Readonly<Record<string, string>>): boolean => {
  const record = recordOf(a)
  const keys = Object.keys(record)
  if (keys.length !== Object.keys(b).length) return false
  for (const key of keys) if (!Object.hasOwn(b, key) || record[key] !== b[key]) return false
  return true
}

/**
 * A series bound to one context: while the context's registry still holds the entry this
 * series found there, an update goes to that entry's hooks (one map read), skipping the
 * two context reads and the registry lookup of `updateUnsafe`. Otherwise (first update, the
 * entry removed or replaced) it updates as `updateUnsafe` does and looks the entry up again.
 */
class BoundImpl<Input> implements M.Bound<Input> {
  private readonly registry: Registry
  /** The series' attributes in this context: its own, then the context's (as `Metric` merges them). */
  private readonly attributes: Readonly<Record<string, string>>
  private key: string | undefined = undefined
  private entry: Metadata | undefined = undefined
  /** The registry files this series under a key other than `find`'s: `updateUnsafe` every time. */
  private unbound = false
  constructor(
    readonly metric: Metric.Metric<Input, unknown>,
    readonly context: Context.Context<never>
  ) {
    this.registry = Context.get(context, Metric.MetricRegistry)
    this.attributes = {
      ...recordOf(metric.attributes),
      ...recordOf(Context.get(context, Metric.CurrentMetricAttributes))
    }
  }
  readonly update = (input: Input): void => {
    const entry = this.entry
    if (entry !== undefined && this.registry.get(this.key!) === entry)
      return entry.hooks.update(input, this.context)
    this.metric.updateUnsafe(input, this.context)
    if (!this.unbound) this.find()
  }
  /**
   * The registry's entry for this series, under the key `Metric` files it by (its type, name,
   * description and sorted attributes, as JSON): one map read, never a scan of the registry
   * (which holds a series per key of every policy). An entry under that key that is not this
   * series (a registry keyed otherwise) leaves the series unbound: `updateUnsafe` every time.
   */
  private find(): void {
    const metric = this.metric
    const key = JSON.stringify([
      metric.type,
      metric.id,
      metric.description,
      Object.entries(this.attributes).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    ])
    const entry = this.registry.get(key)
    if (
      entry !== undefined &&
      entry.id === metric.id &&
      entry.type === metric.type &&
      entry.description === metric.description &&
      sameAttributes(entry.attributes, this.attributes)
    ) {
      this.key = key
      this.entry = entry
    } else {
      this.unbound = true
      this.entry = undefined
    }
  }
}

/** @internal */
export const bind = <Input>(
  metric: Metric.Metric<Input, unknown>,
  context: Context.Context<never>
): M.Bound<Input> => new BoundImpl(metric, context)

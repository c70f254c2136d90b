/**
 * The Effect Metrics of a Sluice policy, built once per attribute set, and the context
 * they are updated in.
 *
 * A policy's bookkeeping runs synchronously, often outside any fiber (a gate's `settle`,
 * a store callback), and updates its metrics with `updateUnsafe(value, context)` in the
 * context the policy was made in. Two things keep that update cheap:
 *
 * - a {@link Family} is one metric name and description; `family.of(attributes)` is the
 *   series of one attribute set as a metric of its own, which the policy builds once
 *   (when it is made, or at a key's first use) and keeps. An update then merges no
 *   attributes, where `Metric.withAttributes` makes a context and a series key each time.
 * - {@link metricContext} copies the two things an update reads from a context, its
 *   `Metric.MetricRegistry` and its `Metric.CurrentMetricAttributes`, into a context of
 *   their own.
 *
 * **Details**
 *
 * - `family.of(attributes)` is the same series as
 *   `Metric.withAttributes(family.metric, attributes)`: same name, description and
 *   attributes. Read a policy's series that way (e.g. with `Metric.value`).
 *   `family.of(undefined)` is `family.metric` itself.
 * - Counters are incremental: an update adds to the count.
 * - An update in `metricContext(context)` lands in the same series of the same registry
 *   as an update in `context`, with the attributes `context` adds.
 *
 * **Gotchas**
 *
 * - Build a series once and keep it: calling `of` per update is the cost this module
 *   avoids. A series per unbounded key (a client, a host) needs a bounded cache.
 * - `metricContext` reads `context` once: a registry or attributes provided later are not
 *   seen. Build it from the (immutable) context the policy was made in.
 *
 * For Sluice's own packages (`@sluice/core/shared/*`): importable, but outside the semver contract.
 *
 * @since 1.0.0
 */
import * as Context from "effect/Context"
import * as Metric from "effect/Metric"

/**
 * One metric name and description: `metric` carries no attributes of its own (read a
 * series through `Metric.withAttributes(metric, attributes)`), and `of(attributes)` builds
 * the series of `attributes` as a metric (`of(undefined)` is `metric`).
 *
 * @since 1.0.0
 * @category models
 */
export interface Family<M> {
  readonly metric: M
  readonly of: (attributes: Metric.Metric.AttributeSet | undefined) => M
}

const family = <A>(metric: A, make: (attributes: Metric.Metric.AttributeSet) => A): Family<A> => ({
  metric,
  of: (attributes) => (attributes === undefined ? metric : make(attributes))
})

/**
 * The {@link Family} of an incremental counter.
 *
 * @example
 * ```ts
 * import * as Meters from "@sluice/core/shared/Meters"
 * import { Effect, Metric } from "effect"
 *
 * const requests = Meters.counter("my_requests", "Requests handled, by route")
 *
 * const program = Effect.gen(function* () {
 *   // built once, where the policy is made, in the context whose registry holds it
 *   const users = requests.of({ route: "users" })
 *   const context = Meters.metricContext(yield* Effect.context<never>())
 *   // the synchronous bookkeeping, outside any fiber
 *   users.updateUnsafe(1, context)
 *   return yield* Metric.value(Metric.withAttributes(requests.metric, { route: "users" }))
 * })
 * Effect.runPromise(program).then(console.log) // prints: { count: 1, incremental: true }
 * ```
 * @since 1.0.0
 * @category constructors
 */
export const counter = (name: string, description: string): Family<Metric.Counter<number>> =>
  family(Metric.counter(name, { description, incremental: true }), (attributes) =>
    Metric.counter(name, { description, incremental: true, attributes })
  )

/**
 * The {@link Family} of a gauge.
 *
 * @since 1.0.0
 * @category constructors
 */
export const gauge = (name: string, description: string): Family<Metric.Gauge<number>> =>
  family(Metric.gauge(name, { description }), (attributes) => Metric.gauge(name, { description, attributes }))

/**
 * The {@link Family} of a histogram with the given bucket `boundaries`.
 *
 * @since 1.0.0
 * @category constructors
 */
export const histogram = (
  name: string,
  description: string,
  boundaries: ReadonlyArray<number>
): Family<Metric.Histogram<number>> =>
  family(Metric.histogram(name, { description, boundaries }), (attributes) =>
    Metric.histogram(name, { description, boundaries, attributes })
  )

/**
 * A context holding only what a metric update reads from `context`: its
 * `Metric.MetricRegistry` and its `Metric.CurrentMetricAttributes` (their defaults when
 * `context` has none). An update in it finds the same series in the same registry as in
 * `context`, by two direct hits instead of two lookups that may fall through to the
 * References' defaults.
 *
 * @since 1.0.0
 * @category utils
 */
export const metricContext = (context: Context.Context<never>): Context.Context<never> =>
  Context.makeUnsafe(
    new Map<string, unknown>([
      [Metric.MetricRegistry.key, Context.get(context, Metric.MetricRegistry)],
      [Metric.CurrentMetricAttributes.key, Context.get(context, Metric.CurrentMetricAttributes)]
    ])
  )

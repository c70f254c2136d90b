/**
 * The Effect Metrics of a Sluice policy, built once per attribute set, and the context
 * they are updated in.
 *
 * A policy's bookkeeping runs synchronously, often outside any fiber (a gate's `settle`,
 * a store callback), and updates its metrics with `updateUnsafe(value, context)` in the
 * context the policy was made in. Three things keep that update cheap:
 *
 * - a {@link Family} is one metric name and description; `family.of(attributes)` is the
 *   series of one attribute set as a metric of its own, which the policy builds once
 *   (when it is made, or at a key's first use) and keeps. An update then merges no
 *   attributes, where `Metric.withAttributes` makes a context and a series key each time.
 * - {@link metricContext} copies the two things an update reads from a context, its
 *   `Metric.MetricRegistry` and its `Metric.CurrentMetricAttributes`, into a context of
 *   their own.
 * - {@link bind} ties a series to one context and updates the registry's entry for it
 *   directly while the registry still holds that entry: for what a policy counts on every call.
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
import type * as Context from "effect/Context"
import type * as Metric from "effect/Metric"
import * as internal from "../internal/meters.js"

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
 * Effect.runPromise(program).then((state) => console.log(state.count)) // prints: 1
 * ```
 * @since 1.0.0
 * @category constructors
 */
export const counter: (name: string, description: string) => Family<Metric.Counter<number>> = internal.counter

/**
 * The {@link Family} of a gauge.
 *
 * @since 1.0.0
 * @category constructors
 */
export const gauge: (name: string, description: string) => Family<Metric.Gauge<number>> = internal.gauge

/**
 * The {@link Family} of a histogram with the given bucket `boundaries`.
 *
 * @since 1.0.0
 * @category constructors
 */
export const histogram: (
  name: string,
  description: string,
  boundaries: ReadonlyArray<number>
) => Family<Metric.Histogram<number>> = internal.histogram

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
export const metricContext: (context: Context.Context<never>) => Context.Context<never> =
  internal.metricContext

/**
 * A series bound to a context (see {@link bind}).
 *
 * @since 1.0.0
 * @category models
 */
export interface Bound<in Input> {
  readonly metric: Metric.Metric<Input, unknown>
  readonly context: Context.Context<never>
  /** As `metric.updateUnsafe(input, context)`. */
  readonly update: (input: Input) => void
}

/**
 * Binds a series to the context it is updated in, for a per-call path: `bound.update(input)`
 * is `metric.updateUnsafe(input, context)`, at the cost of one registry read instead of two
 * context reads and a registry read.
 *
 * **Details**
 *
 * - The bound series keeps the registry entry it found at its first update, and uses it while
 *   the registry still maps the series to that entry: an entry removed (`Metric.removeUnsafe`)
 *   or replaced is seen at the next update, which then updates as `updateUnsafe` does and
 *   finds the new entry.
 * - `context` is read once, like {@link metricContext}: bind in the (immutable) context the
 *   policy was made in, or in a context that comes back call after call.
 * - The entry is looked up under the key `Metric` files a series by (type, name, description
 *   and attributes); a registry that holds it under another key leaves the series unbound,
 *   updated by `updateUnsafe` every time: the same counts, without the saving.
 *
 * @example
 * ```ts
 * import * as Meters from "@sluice/core/shared/Meters"
 * import { Effect, Metric } from "effect"
 *
 * const requests = Meters.counter("app_requests", "requests served")
 * const program = Effect.gen(function* () {
 *   const served = Meters.bind(requests.of({ route: "/" }), yield* Effect.context<never>())
 *   served.update(1)
 *   return yield* Metric.value(Metric.withAttributes(requests.metric, { route: "/" }))
 * })
 * Effect.runPromise(program).then((state) => console.log(state.count)) // prints: 1
 * ```
 * @since 1.0.0
 * @category constructors
 */
export const bind: <Input>(
  metric: Metric.Metric<Input, unknown>,
  context: Context.Context<never>
) => Bound<Input> = internal.bind

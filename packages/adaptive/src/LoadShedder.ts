/**
 * Utilization-based load shedding for a server.
 *
 * Utilization is `max(smoothed active / capacity, event-loop utilization)`:
 *
 * - *active* is the number of guarded fibers in flight, averaged with
 *   exponential time decay (time constant `smoothing`, default 1 s; the average
 *   integrates the in-flight count as a step function, so a burst that arrives
 *   and leaves within a few milliseconds barely moves it), against `capacity`,
 *   the amount of concurrent work at which the server counts as fully used;
 * - optionally, Node's event-loop utilization
 *   (`performance.eventLoopUtilization()`), sampled every `eventLoop.interval`
 *   on a `Clock`-driven schedule. The source is injectable
 *   (`eventLoop.source`), so tests and simulations are deterministic.
 *
 * **The hard bound.** A smoothed average lags a burst on purpose, so a burst at an idle
 * server would be admitted whole while the estimate catches up. By default the shedder
 * therefore carries a concurrency limiter ({@link Service.bound}): at most `capacity`
 * requests run at once, and up to `bound.maxQueue` (default `capacity / 2`) wait at most
 * `bound.maxWait` (default 1 s) in a queue that serves the most critical waiter first and
 * makes a less critical waiter give way to a more critical arrival. The smoothed work is
 * then judged against `capacity + maxQueue` (what the bound holds): the shedder refuses
 * cheaply what the queue could not take, and the queue decides between levels. `bound: false`
 * leaves the shedder alone (utilization against `capacity`, no bound).
 *
 * Utilization decides *how much* is shed, criticality decides *who*: shedding is
 * strictly by criticality. A request at level `L` is shed with
 * `Errors.Overloaded({ reason: "shed", retryAfter })` when its level's
 * utilization reaches `thresholds[L]`, where the level's utilization is
 *
 * - the smoothed work of level `L` *and the more critical levels* only, against
 *   `capacity`: less critical work in flight (admitted or queued behind the
 *   shedder) never gets a more critical request shed, so a flood of `SHEDDABLE`
 *   work cannot crowd out `CRITICAL` work that is within capacity;
 * - or the event-loop utilization, but only when no less critical request
 *   arrived within the last two sampling intervals: the loop's busyness cannot
 *   be attributed to a level, and while less critical requests keep arriving
 *   they are the ones to refuse (refusing a more critical one would not relieve
 *   the loop that is busy refusing them). Only arrivals of earlier instants
 *   count, so the decisions within one instant agree whatever the order of
 *   arrivals.
 *
 * Defaults:
 *
 * | level | sheds from |
 * |---|---|
 * | `SHEDDABLE` | 0.8 |
 * | `SHEDDABLE_PLUS` | 0.9 |
 * | `CRITICAL` | 1.0 |
 * | `CRITICAL_PLUS` | 1.1 (event-loop utilization alone, at most 1, never sheds it) |
 *
 * Thresholds must not decrease with criticality (`Infinity` means never). Since a
 * level's utilization never exceeds a less critical level's, at any instant, if
 * some level is admitted, every more critical level is admitted too; and while a
 * less critical request is being admitted or queued, no more critical one is
 * shed.
 *
 * **Over quota.** Within a level, work over its customer's quota
 * (`Criticality.currentOverQuota`, set by `Middleware.quota({ enforce: "overload" })`) ranks
 * below the level's other work and above every less critical level: it is judged by all the
 * work of its level and above against `LoadShedder.overQuotaThreshold` (halfway to the less
 * critical level's threshold: 0.75, 0.85, 0.95, 1.05 with the defaults), the level's other
 * work is judged without it, and the bound gives it a free permit but no place in its queue
 * unless it goes ahead of a less critical waiter (served after its level's other waiters,
 * displaced first). So it is admitted while the server has room and shed first, within its
 * level, when it has none.
 *
 * The shedder speaks the admission protocol (`Admission`): {@link Service.gate} admits
 * or sheds (a local `Overloaded`, outcome `"refused"`), and `run` is
 * `Admission.guard([shedder.gate])`, so it composes with a concurrency limiter or
 * other gates in one step. It reads the work's criticality from the gate's `Entry`,
 * and counts the work active until its ticket is settled, whatever the outcome: it
 * measures load and does not classify how the work went.
 *
 * Metrics (attribute `shedder` = `name`): gauges `sluice_load_shedder_utilization`
 * and `sluice_load_shedder_event_loop_utilization`, counters
 * `sluice_load_shedder_shed`, `sluice_load_shedder_over_quota_shed` and
 * `sluice_load_shedder_admitted` (attribute `criticality`), updated in the context the shedder was made in (its `MetricRegistry`).
 * A shed opens no span (under a flood it would cost more than the refusal) and reuses one
 * `Overloaded` value; the counters and {@link Service.events} see each one.
 *
 * @since 0.1.0
 */
import type { Admission, Criticality, Errors, Options, ServerLoad } from "@sluice/core"
import type * as ConcurrencyLimiter from "./ConcurrencyLimiter.js"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import type * as Metric from "effect/Metric"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import * as internal from "./internal/loadShedder.js"
import type * as Config from "effect/Config"

/**
 * The shedder service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /**
   * Runs `self` if the current criticality is admitted, counting it as active
   * until it ends (success, failure or interruption); otherwise fails with
   * `Overloaded` (reason `"shed"`).
   *
   * @since 0.2.0
   */
  readonly withShedder: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Overloaded, R>
  /**
   * The shedder's side of the admission protocol, to compose with other gates in one
   * step through `Admission.guard` (`run` is `Admission.guard([gate])`): a ticket when
   * the entry's criticality is admitted, else a local `Overloaded` (reason `"shed"`).
   * The ticket counts as active work until it is settled.
   *
   * @since 0.2.0
   */
  readonly gate: Admission.Gate<Ticket, Errors.Overloaded>
  /** The utilization now: `max(smoothed active / capacity, event-loop utilization)`, all levels. */
  readonly utilization: Effect.Effect<number>
  /** Synchronous peek of the utilization; without `nowMillis`, reads the `Clock` the shedder was built with. */
  readonly utilizationUnsafe: (nowMillis?: number) => number
  /**
   * The utilization a request at `criticality` is judged by now (see the module
   * notes): the work of that level and above, or the event-loop utilization if
   * no less critical request arrived lately. With `overQuota`, a request over its
   * customer's quota: the work of its level counts whole.
   *
   * @since 0.2.0
   */
  readonly levelUtilizationUnsafe: (
    criticality: Criticality.Criticality,
    nowMillis?: number,
    overQuota?: boolean
  ) => number
  /** Guarded fibers in flight right now. */
  readonly activeUnsafe: () => number
  /**
   * Guarded fibers of one level in flight right now.
   *
   * @since 0.2.0
   */
  readonly activeOfUnsafe: (criticality: Criticality.Criticality) => number
  /**
   * Guarded fibers of one level over their customer's quota (`Criticality.currentOverQuota`)
   * in flight right now (also in {@link activeOfUnsafe}).
   *
   * @since 1.0.0
   */
  readonly overQuotaOfUnsafe: (criticality: Criticality.Criticality) => number
  /** The last event-loop utilization sample (0 when not sampling). */
  readonly eventLoopUtilizationUnsafe: () => number
  /**
   * Would a request at `criticality` be shed now? With `overQuota`, a request over its
   * customer's quota (`Criticality.currentOverQuota`): the server's overload as such a
   * request meets it.
   */
  readonly wouldShedUnsafe: (
    criticality: Criticality.Criticality,
    nowMillis?: number,
    overQuota?: boolean
  ) => boolean
  /**
   * Sheds at once what {@link gate} would shed now, with no pass through the gates: records
   * the arrival, counts the shed (metrics, events) and returns the shedder's one refusal value,
   * or returns `undefined` when the request would be admitted (it then enters through
   * {@link gate} as before, which takes its ticket). A server's refusal fast path: under a flood most requests
   * are shed, and this spares each of them the admission machinery (`Middleware.loadShed` uses it).
   *
   * @since 1.1.0
   */
  readonly shedUnsafe: (
    criticality: Criticality.Criticality,
    nowMillis: number,
    overQuota?: boolean
  ) => Errors.Overloaded | undefined
  readonly thresholds: Readonly<Record<Criticality.Criticality, number>>
  readonly capacity: number
  readonly retryAfter: Duration.Duration
  /**
   * The hard bound on admitted concurrent work (see the module notes): a concurrency
   * limiter of `capacity` permits (rounded) whose queue serves the most critical waiter
   * first; `undefined` with `bound: false`. `withShedder` and `Middleware.loadShed()` enter
   * the shedder and then this limiter, in one step.
   *
   * @since 1.1.0
   */
  readonly bound: ConcurrencyLimiter.Limiter | undefined
  /**
   * The shedder as a `ServerLoad` reading: its utilization, and whether it would admit a
   * level now (records nothing). `Middleware.loadShed()` sets it as the `ServerLoad` of the work
   * it admits.
   *
   * @since 1.1.0
   */
  readonly load: ServerLoad.ServerLoad
  /**
   * Every shed request, as it happens (published off the success path only; a
   * subscriber that falls behind by more than 256 events loses the oldest).
   *
   * @since 0.2.0
   */
  readonly events: Stream.Stream<Event>
}

/**
 * What the shedder reports on {@link Service.events}: a request was shed with
 * `Overloaded` (reason `"shed"`), at the utilization it was judged by.
 *
 * @since 0.2.0
 * @category models
 */
export type Event = {
  readonly _tag: "Shed"
  readonly shedder: string
  readonly criticality: Criticality.Criticality
  /** The request was over its customer's quota (`Criticality.currentOverQuota`). */
  readonly overQuota: boolean
  readonly utilization: number
}

/**
 * Work a shedder admitted through its {@link Service.gate}.
 *
 * @since 0.2.0
 * @category models
 */
export interface Ticket {
  readonly criticality: Criticality.Criticality
}

/**
 * The service (a `Context.Service` key).
 *
 * @since 0.1.0
 * @category tags
 */
export class LoadShedder extends Context.Service<LoadShedder, Service>()("@sluice/adaptive/LoadShedder") {}

/**
 * Options: `capacity` (required, > 0), `smoothing` (default 1 s), `thresholds`
 * (per level, partial allowed, not decreasing with criticality), `retryAfter`
 * (the hint carried by `Overloaded`, default 1 s), `eventLoop` (`{ interval?,
 * source? }`, omitted: event-loop utilization is not used), `bound` (the hard bound:
 * `{ maxQueue?, maxWait? }`, default `capacity / 2` waiters for at most 1 s; `false`: none),
 * `name` (metric attribute).
 *
 * @since 0.1.0
 * @category models
 */
export interface LoadShedderOptions {
  readonly capacity: number
  readonly smoothing?: Duration.Input | undefined
  readonly thresholds?:
    | {
        readonly SHEDDABLE?: number | undefined
        readonly SHEDDABLE_PLUS?: number | undefined
        readonly CRITICAL?: number | undefined
        readonly CRITICAL_PLUS?: number | undefined
      }
    | undefined
  readonly retryAfter?: Duration.Input | undefined
  readonly eventLoop?:
    | {
        readonly interval?: Duration.Input | undefined
        readonly source?: Effect.Effect<number> | undefined
      }
    | undefined
  readonly bound?:
    | false
    | {
        readonly maxQueue?: number | undefined
        readonly maxWait?: Duration.Input | undefined
      }
    | undefined
  readonly name?: string | undefined
}

/**
 * The default thresholds.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultThresholds: Readonly<Record<Criticality.Criticality, number>> = internal.defaultThresholds

/**
 * The utilization from which work of `criticality` over its customer's quota is shed, given
 * the levels' `thresholds`: halfway between the level's threshold and the next less critical
 * level's (that one when the level's is `Infinity`); for `SHEDDABLE`, below its threshold by
 * half the step to `SHEDDABLE_PLUS`'s (at most half its threshold).
 *
 * @example
 * ```ts
 * import { LoadShedder } from "@sluice/adaptive"
 *
 * console.log(LoadShedder.overQuotaThreshold(LoadShedder.defaultThresholds, "CRITICAL")) // prints: 0.95
 * ```
 * @since 1.0.0
 * @category utils
 */
export const overQuotaThreshold: (
  thresholds: Readonly<Record<Criticality.Criticality, number>>,
  criticality: Criticality.Criticality
) => number = internal.overQuotaThreshold

/**
 * The metrics the shedder updates (attribute `shedder`, and `criticality` for the counters).
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads a metric, shown for its attribute names
 * import { LoadShedder } from "@sluice/adaptive"
 * import { Metric } from "effect"
 *
 * const shedSheddable = Metric.value(
 *   Metric.withAttributes(LoadShedder.metrics.shed, { shedder: "default", criticality: "SHEDDABLE" })
 * )
 * ```
 * @since 0.1.0
 * @category metrics
 */
export const metrics: {
  readonly utilization: Metric.Gauge<number>
  readonly eventLoopUtilization: Metric.Gauge<number>
  readonly shed: Metric.Counter<number>
  readonly overQuotaShed: Metric.Counter<number>
  readonly admitted: Metric.Counter<number>
} = internal.metrics

/**
 * A stateful source of Node's event-loop utilization between successive
 * samples, the default `eventLoop.source`.
 *
 * @since 0.1.0
 * @category utils
 */
export const nodeEventLoopUtilization: Effect.Effect<Effect.Effect<number>> =
  internal.nodeEventLoopUtilization

/**
 * Makes a shedder; its event-loop sampler (if any) lives in the scope.
 *
 * @example
 * ```ts
 * import { LoadShedder } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const shedder = yield* LoadShedder.make({ capacity: 100 })
 *   console.log(yield* shedder.withShedder(Effect.succeed("handled"))) // prints: handled
 * }).pipe(Effect.scoped)
 * Effect.runPromise(program)
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (
  options: LoadShedderOptions
) => Effect.Effect<Service, Options.InvalidOptions, Scope.Scope> = internal.make

/**
 * A layer providing the shedder; fails with `InvalidOptions` naming the field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { LoadShedder } from "@sluice/adaptive"
 *
 * const ShedderLive = LoadShedder.layer({
 *   capacity: 200,
 *   thresholds: { SHEDDABLE: 0.7 },
 *   eventLoop: { interval: "500 millis" }
 * })
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: LoadShedderOptions): Layer.Layer<LoadShedder, Options.InvalidOptions> =>
  Layer.effect(LoadShedder, internal.make(options))

/**
 * Runs an effect under a shedder: the one in context, or a given one
 * (data-first or data-last).
 *
 * @example
 * ```ts
 * // snippet: compile-only — needs the LoadShedder layer the app provides
 * import { LoadShedder } from "@sluice/adaptive"
 * import { Criticality } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const handler = LoadShedder.withShedder(Effect.succeed("report")).pipe(Criticality.withCriticality("SHEDDABLE"))
 * const same = Effect.succeed("report").pipe(LoadShedder.withShedder())
 * ```
 * @since 0.2.0
 * @category combinators
 */
export const withShedder: {
  (shedder: Service): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Overloaded, R>
  (): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Overloaded, R | LoadShedder>
  <A, E, R>(self: Effect.Effect<A, E, R>, shedder: Service): Effect.Effect<A, E | Errors.Overloaded, R>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Errors.Overloaded, R | LoadShedder>
} = dual(
  (args) => Effect.isEffect(args[0]),
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    shedder?: Service
  ): Effect.Effect<A, E | Errors.Overloaded, R | LoadShedder> =>
    shedder === undefined
      ? Effect.flatMap(LoadShedder, (s) => s.withShedder(self))
      : shedder.withShedder(self)
)

/**
 * {@link layer} with its options read from `Config` (e.g. environment variables): a
 * missing or malformed value fails the layer with `ConfigError`, a bad value with
 * `InvalidOptions` naming the field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import { LoadShedder } from "@sluice/adaptive"
 * import { Config } from "effect"
 *
 * const Live = LoadShedder.layerConfig(Config.all({ capacity: Config.Number("SHEDDER_CAPACITY") }))
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<LoadShedderOptions>
): Layer.Layer<LoadShedder, Options.InvalidOptions | Config.ConfigError> =>
  Layer.unwrap(Effect.map(config, (options) => layer(options)))

import { type Options } from "@sluice/core"
import * as Meters from "@sluice/core/shared/Meters"
import * as Kernel from "@sluice/kernel/monitor/ThresholdMonitor"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Metric from "effect/Metric"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as T from "../ThresholdMonitor.js"
import * as EventHub from "@sluice/core/shared/EventHub"
import { Millis, noContext, options, Service, withDefault } from "./service.js"

/** @internal */
export const TypeId: typeof T.TypeId = Symbol.for("@sluice/adaptive/ThresholdMonitor") as any

const Thresholds = Schema.Struct({ rate: Schema.optional(Schema.Number), latency: Schema.optional(Millis) })

const monitorOptions = options(
  "ThresholdMonitor",
  Schema.Struct({
    name: withDefault(Schema.NonEmptyString, "default"),
    thresholds: Schema.optional(Thresholds),
    operations: Schema.optional(Schema.Record(Schema.String, Thresholds)),
    instances: Schema.optional(Schema.Number),
    window: Schema.optional(Millis),
    tick: Schema.optional(Millis),
    latencyWindow: Schema.optional(Millis)
  }),
  Kernel.issues
)
const decodeThresholds = options("ThresholdMonitor.thresholds", Thresholds, (t) =>
  Kernel.limitsIssues(t)
).decode
const decodeInstances = options("ThresholdMonitor.instances", Schema.Number, Kernel.instancesIssues).decode

const rateGauge = Meters.gauge(
  "sluice_threshold_monitor_rate",
  "Exponentially weighted rate of successful calls per second, per operation"
)
const medianGauge = Meters.gauge(
  "sluice_threshold_monitor_median_ms",
  "Median latency of successful calls, per operation, in milliseconds"
)
const exceededGauge = Meters.gauge(
  "sluice_threshold_monitor_exceeded",
  "1 while an operation is over one of its thresholds, else 0"
)

/** One operation's series, built the first time the operation reports. */
interface OperationMetrics {
  readonly rate: Metric.Gauge<number>
  readonly median: Metric.Gauge<number>
  readonly exceeded: Metric.Gauge<number>
}

class ThresholdMonitorImpl extends Service implements T.Service {
  readonly [TypeId]: T.TypeId = TypeId
  private readonly hub = EventHub.makeUnsafe<T.Event>()
  readonly events: Stream.Stream<T.Event> = Stream.fromPubSub(this.hub)
  private readonly rule: Kernel.ThresholdMonitor
  private readonly series = new Map<string, OperationMetrics>()
  constructor(
    readonly name: string,
    options: Kernel.Options,
    private readonly context: Context.Context<never>
  ) {
    super()
    this.rule = Kernel.make(options)
  }
  recordUnsafe(operation: string, nowMillis: number, latencyMillis: number): void {
    this.rule.operation(operation).record(nowMillis, latencyMillis)
  }
  statsUnsafe(operation: string, nowMillis: number): T.Stats {
    const s = this.rule.operation(operation)
    const { exceeded, instances, latencyThreshold, median, rate, rateThreshold } = this.rule.stats(
      s,
      nowMillis
    )
    if (s.reportDue(nowMillis)) {
      const metrics = this.metricsOf(operation)
      metrics.rate.updateUnsafe(rate, this.context)
      if (median !== undefined) metrics.median.updateUnsafe(median, this.context)
      metrics.exceeded.updateUnsafe(exceeded ? 1 : 0, this.context)
    }
    const stats: T.Stats = {
      operation,
      rate,
      medianMillis: median,
      rateThreshold,
      latencyThresholdMillis: latencyThreshold,
      instances,
      exceeded
    }
    if (s.crossed(exceeded)) EventHub.publish(this.hub, { _tag: "Crossing", operation, exceeded, stats })
    return stats
  }
  private metricsOf(operation: string): OperationMetrics {
    let metrics = this.series.get(operation)
    if (metrics === undefined) {
      const attributes = { name: this.name, operation }
      metrics = {
        rate: rateGauge.of(attributes),
        median: medianGauge.of(attributes),
        exceeded: exceededGauge.of(attributes)
      }
      this.series.set(operation, metrics)
    }
    return metrics
  }
  exceededUnsafe(operation: string, nowMillis: number): boolean {
    return this.statsUnsafe(operation, nowMillis).exceeded
  }
  record(operation: string, latency: Duration.Input): Effect.Effect<void> {
    return Effect.map(Clock.currentTimeMillis, (now) =>
      this.recordUnsafe(operation, now, Duration.toMillis(Duration.fromInputUnsafe(latency)))
    )
  }
  exceeded(operation: string): Effect.Effect<boolean> {
    return Effect.map(Clock.currentTimeMillis, (now) => this.exceededUnsafe(operation, now))
  }
  stats(operation: string): Effect.Effect<T.Stats> {
    return Effect.map(Clock.currentTimeMillis, (now) => this.statsUnsafe(operation, now))
  }
  withMonitor<A, E, R>(self: Effect.Effect<A, E, R>, operation: string): Effect.Effect<A, E, R> {
    return Effect.flatMap(Clock.currentTimeMillis, (start) =>
      Effect.tap(self, () =>
        Effect.map(Clock.currentTimeMillis, (end) => this.recordUnsafe(operation, end, end - start))
      )
    )
  }
  setThresholds(thresholds: T.Thresholds, operation?: string): Effect.Effect<void, Options.InvalidOptions> {
    return Effect.map(decodeThresholds(thresholds), (t) => this.rule.setThresholds(t, operation))
  }
  setInstances(instances: number): Effect.Effect<void, Options.InvalidOptions> {
    return Effect.map(decodeInstances(instances), (n) => this.rule.setInstances(n))
  }
  get instances(): Effect.Effect<number> {
    return Effect.sync(() => this.rule.instances)
  }
}

/** @internal */
export const make = (options: T.ThresholdMonitorOptions): Effect.Effect<T.Service, Options.InvalidOptions> =>
  Effect.flatMap(monitorOptions.decode(options), (o) =>
    Effect.withFiber((fiber) => Effect.succeed(new ThresholdMonitorImpl(o.name, o, fiber.context)))
  )

/** @internal */
export const makeUnsafe = (options: T.ThresholdMonitorOptions): T.Service => {
  const o = monitorOptions.decodeSync(options)
  return new ThresholdMonitorImpl(o.name, o, noContext)
}

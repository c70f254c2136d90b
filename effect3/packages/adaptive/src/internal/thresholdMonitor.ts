import type { Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/monitor/ThresholdMonitor"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as T from "../ThresholdMonitor.js"
import { makeHub, publish } from "./events.js"
import { Millis, options, Service, tags } from "./service.js"

/** @internal */
export const TypeId: typeof T.TypeId = Symbol.for("@sluice/adaptive/ThresholdMonitor") as any

const Thresholds = Schema.Struct({ rate: Schema.optional(Schema.Number), latency: Schema.optional(Millis) })

const monitorOptions = options(
  "ThresholdMonitor",
  Schema.Struct({
    name: Schema.optionalWith(Schema.NonEmptyString, { default: () => "default" }),
    thresholds: Schema.optional(Thresholds),
    operations: Schema.optional(Schema.Record({ key: Schema.String, value: Thresholds })),
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

const rateGauge = Metric.gauge("sluice_threshold_monitor_rate", {
  description: "Exponentially weighted rate of successful calls per second, per operation"
})
const medianGauge = Metric.gauge("sluice_threshold_monitor_median_ms", {
  description: "Median latency of successful calls, per operation, in milliseconds"
})
const exceededGauge = Metric.gauge("sluice_threshold_monitor_exceeded", {
  description: "1 while an operation is over one of its thresholds, else 0"
})

class ThresholdMonitorImpl extends Service implements T.Service {
  readonly [TypeId]: T.TypeId = TypeId
  private readonly hub = makeHub<T.Event>()
  readonly events: Stream.Stream<T.Event> = Stream.fromPubSub(this.hub)
  private readonly rule: Kernel.ThresholdMonitor
  constructor(
    readonly name: string,
    options: Kernel.Options
  ) {
    super()
    this.rule = Kernel.make(options)
  }
  unsafeRecord(operation: string, nowMillis: number, latencyMillis: number): void {
    this.rule.operation(operation).record(nowMillis, latencyMillis)
  }
  unsafeStats(operation: string, nowMillis: number): T.Stats {
    const s = this.rule.operation(operation)
    const { exceeded, instances, latencyThreshold, median, rate, rateThreshold } = this.rule.stats(
      s,
      nowMillis
    )
    if (s.reportDue(nowMillis)) {
      const labels = tags(["name", this.name], ["operation", operation])
      rateGauge.unsafeUpdate(rate, labels)
      if (median !== undefined) medianGauge.unsafeUpdate(median, labels)
      exceededGauge.unsafeUpdate(exceeded ? 1 : 0, labels)
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
    if (s.crossed(exceeded)) publish(this.hub, { _tag: "Crossing", operation, exceeded, stats })
    return stats
  }
  unsafeExceeded(operation: string, nowMillis: number): boolean {
    return this.unsafeStats(operation, nowMillis).exceeded
  }
  record(operation: string, latency: Duration.DurationInput): Effect.Effect<void> {
    return Effect.map(Clock.currentTimeMillis, (now) =>
      this.unsafeRecord(operation, now, Duration.toMillis(Duration.decode(latency)))
    )
  }
  exceeded(operation: string): Effect.Effect<boolean> {
    return Effect.map(Clock.currentTimeMillis, (now) => this.unsafeExceeded(operation, now))
  }
  stats(operation: string): Effect.Effect<T.Stats> {
    return Effect.map(Clock.currentTimeMillis, (now) => this.unsafeStats(operation, now))
  }
  withMonitor<A, E, R>(self: Effect.Effect<A, E, R>, operation: string): Effect.Effect<A, E, R> {
    return Effect.flatMap(Clock.currentTimeMillis, (start) =>
      Effect.tap(self, () =>
        Effect.map(Clock.currentTimeMillis, (end) => this.unsafeRecord(operation, end, end - start))
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
  Effect.map(monitorOptions.decode(options), (o) => new ThresholdMonitorImpl(o.name, o))

/** @internal */
export const unsafeMake = (options: T.ThresholdMonitorOptions): T.Service => {
  const o = monitorOptions.decodeSync(options)
  return new ThresholdMonitorImpl(o.name, o)
}

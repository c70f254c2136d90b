import { Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/monitor/ThresholdMonitor"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import { pipeArguments } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import type * as T from "../ThresholdMonitor.js"
import { bindMethods } from "./bind.js"
import * as Stream from "effect/Stream"
import { makeHub } from "./events.js"

/** @internal */
export const TypeId: typeof T.TypeId = Symbol.for("@sluice/adaptive/ThresholdMonitor") as any

/** @internal */
export const Thresholds = Schema.Struct({
  rate: Schema.optional(Options.PositiveNumber),
  latency: Schema.optional(Options.PositiveDuration)
})

/** @internal */
export const ThresholdMonitorOptions = Schema.Struct({
  name: Schema.optionalWith(Schema.NonEmptyString, { default: () => "default" }),
  thresholds: Schema.optionalWith(Thresholds, { default: () => ({}) }),
  operations: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Thresholds }), {
    default: () => ({})
  }),
  instances: Schema.optionalWith(Options.PositiveInt, { default: () => 1 }),
  window: Schema.optionalWith(Options.PositiveDuration, {
    default: () => Duration.millis(Kernel.defaults.window)
  }),
  tick: Schema.optionalWith(Options.PositiveDuration, {
    default: () => Duration.millis(Kernel.defaults.tick)
  }),
  latencyWindow: Schema.optionalWith(Options.PositiveDuration, {
    default: () => Duration.millis(Kernel.defaults.latencyWindow)
  })
}).pipe(
  Schema.filter((o) =>
    Duration.lessThanOrEqualTo(o.tick, o.window)
      ? undefined
      : { path: ["tick"], message: "tick must not exceed window" }
  )
)

type Decoded = Schema.Schema.Type<typeof ThresholdMonitorOptions>
type DecodedThresholds = Schema.Schema.Type<typeof Thresholds>

const rateGauge = Metric.gauge("sluice_threshold_monitor_rate", {
  description: "Exponentially weighted rate of successful calls per second, per operation"
})
const medianGauge = Metric.gauge("sluice_threshold_monitor_median_ms", {
  description: "Median latency of successful calls, per operation, in milliseconds"
})
const exceededGauge = Metric.gauge("sluice_threshold_monitor_exceeded", {
  description: "1 while an operation is over one of its thresholds, else 0"
})

const GAUGE_REFRESH_MILLIS = 1000

const toLimits = (t: DecodedThresholds): Kernel.Limits => ({
  rate: t.rate,
  latency: t.latency === undefined ? undefined : Duration.toMillis(t.latency)
})

class OperationState extends Kernel.Operation {
  readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  gaugesAt = Number.NEGATIVE_INFINITY
  /** The state last reported on `events`. */
  exceeded = false
  constructor(operation: string, windows: Kernel.Windows, name: string) {
    super(operation, windows)
    this.tags = [MetricLabel.make("name", name), MetricLabel.make("operation", operation)]
  }
}

class ThresholdMonitorImpl implements T.Service {
  protected readonly bound = bindMethods(this, [
    "unsafeRecord",
    "unsafeStats",
    "unsafeExceeded",
    "record",
    "exceeded",
    "stats",
    "withMonitor",
    "setThresholds",
    "setInstances",
    "pipe"
  ])
  readonly [TypeId]: T.TypeId = TypeId
  readonly name: string
  private readonly hub = makeHub<T.Event>()
  readonly events: Stream.Stream<T.Event> = Stream.fromPubSub(this.hub)
  private readonly ops = new Map<string, OperationState>()
  private readonly rule: Kernel.ThresholdMonitor
  constructor(options: Decoded) {
    this.name = options.name
    const operations = Object.fromEntries(
      Object.entries(options.operations).map(([op, t]) => [op, toLimits(t)] as const)
    )
    this.rule = Kernel.make({
      thresholds: toLimits(options.thresholds),
      operations,
      instances: options.instances,
      window: Duration.toMillis(options.window),
      tick: Duration.toMillis(options.tick),
      latencyWindow: Duration.toMillis(options.latencyWindow)
    })
  }
  private state(operation: string): OperationState {
    let s = this.ops.get(operation)
    if (s === undefined) {
      s = new OperationState(operation, this.rule.windows, this.name)
      this.ops.set(operation, s)
    }
    return s
  }
  unsafeRecord(operation: string, nowMillis: number, latencyMillis: number): void {
    this.state(operation).record(nowMillis, latencyMillis)
  }
  unsafeStats(operation: string, nowMillis: number): T.Stats {
    const s = this.state(operation)
    const { exceeded, instances, latencyThreshold, median, rate, rateThreshold } = this.rule.stats(
      s,
      nowMillis
    )
    if (nowMillis - s.gaugesAt >= GAUGE_REFRESH_MILLIS) {
      s.gaugesAt = nowMillis
      rateGauge.unsafeUpdate(rate, s.tags)
      if (median !== undefined) medianGauge.unsafeUpdate(median, s.tags)
      exceededGauge.unsafeUpdate(exceeded ? 1 : 0, s.tags)
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
    if (exceeded !== s.exceeded) {
      s.exceeded = exceeded
      this.hub.unsafeOffer({ _tag: "Crossing", operation, exceeded, stats })
    }
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
    return Effect.map(decodeThresholds(thresholds), (t) => this.rule.setThresholds(toLimits(t), operation))
  }
  setInstances(instances: number): Effect.Effect<void, Options.InvalidOptions> {
    return Effect.map(decodeInstances(instances), (n) => this.rule.setInstances(n))
  }
  get instances(): Effect.Effect<number> {
    return Effect.sync(() => this.rule.instances)
  }
  pipe() {
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  }
}

const decodeThresholds = Options.decode(
  "ThresholdMonitor.thresholds",
  Thresholds as Schema.Schema<any, T.Thresholds>
)
const decodeInstances = Options.decode("ThresholdMonitor.instances", Options.PositiveInt)

const decode = Options.decode(
  "ThresholdMonitor",
  ThresholdMonitorOptions as unknown as Schema.Schema<Decoded, T.ThresholdMonitorOptions>
)
const decodeSync = Options.decodeSync(
  "ThresholdMonitor",
  ThresholdMonitorOptions as unknown as Schema.Schema<Decoded, T.ThresholdMonitorOptions>
)

/** @internal */
export const make = (options: T.ThresholdMonitorOptions): Effect.Effect<T.Service, Options.InvalidOptions> =>
  Effect.map(decode(options), (o) => new ThresholdMonitorImpl(o))

/** @internal */
export const unsafeMake = (options: T.ThresholdMonitorOptions): T.Service =>
  new ThresholdMonitorImpl(decodeSync(options))

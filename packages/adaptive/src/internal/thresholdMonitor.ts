import { Ewma, LatencyWindow, Options } from "@sluice/core"
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
  window: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.minutes(5) }),
  tick: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.seconds(5) }),
  latencyWindow: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.minutes(1) })
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
const MEDIAN_REFRESH_MILLIS = 1000

interface Limits {
  rate: number | undefined
  latencyMillis: number | undefined
}

const toLimits = (t: DecodedThresholds): Limits => ({
  rate: t.rate,
  latencyMillis: t.latency === undefined ? undefined : Duration.toMillis(t.latency)
})

class OperationState {
  readonly rate: Ewma.EwmaRate
  readonly latencies: LatencyWindow.LatencyWindow
  readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  gaugesAt = Number.NEGATIVE_INFINITY
  /** The state last reported on `events`. */
  exceeded = false
  private cachedMedian: number | undefined = undefined
  private medianAt = Number.NEGATIVE_INFINITY
  private unseen = false
  constructor(
    readonly operation: string,
    name: string,
    o: Decoded
  ) {
    this.rate = Ewma.unsafeMakeRate({ window: o.window, tick: o.tick })
    this.latencies = LatencyWindow.unsafeMake({ window: o.latencyWindow })
    this.tags = [MetricLabel.make("name", name), MetricLabel.make("operation", operation)]
  }
  record(nowMillis: number, latencyMillis: number): void {
    this.latencies.unsafeRecord(nowMillis, latencyMillis)
    if (this.cachedMedian === undefined) this.unseen = true
  }
  /** The median, re-read from the sketch at most once per second (and at once after a first sample). */
  median(nowMillis: number): number | undefined {
    if (this.unseen || nowMillis - this.medianAt >= MEDIAN_REFRESH_MILLIS) {
      this.cachedMedian = this.latencies.unsafeQuantile(nowMillis, 0.5)
      this.medianAt = nowMillis
      this.unseen = false
    }
    return this.cachedMedian
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
  private defaults: Limits
  private readonly overrides = new Map<string, Limits>()
  private instanceCount: number
  constructor(private readonly options: Decoded) {
    this.name = options.name
    this.defaults = toLimits(options.thresholds)
    for (const [op, t] of Object.entries(options.operations)) this.overrides.set(op, toLimits(t))
    this.instanceCount = options.instances
  }
  private state(operation: string): OperationState {
    let s = this.ops.get(operation)
    if (s === undefined) {
      s = new OperationState(operation, this.name, this.options)
      this.ops.set(operation, s)
    }
    return s
  }
  private limits(operation: string): Limits {
    return this.overrides.get(operation) ?? this.defaults
  }
  unsafeRecord(operation: string, nowMillis: number, latencyMillis: number): void {
    const s = this.state(operation)
    s.rate.unsafeMark(nowMillis, 1)
    s.record(nowMillis, latencyMillis)
  }
  unsafeStats(operation: string, nowMillis: number): T.Stats {
    const s = this.state(operation)
    const limits = this.limits(operation)
    const rate = s.rate.unsafeRate(nowMillis)
    const median = s.median(nowMillis)
    const rateThreshold = limits.rate === undefined ? undefined : limits.rate / this.instanceCount
    const exceeded =
      (rateThreshold !== undefined && rate > rateThreshold) ||
      (limits.latencyMillis !== undefined && median !== undefined && median > limits.latencyMillis)
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
      latencyThresholdMillis: limits.latencyMillis,
      instances: this.instanceCount,
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
    return Effect.map(decodeThresholds(thresholds), (t) => {
      if (operation === undefined) this.defaults = toLimits(t)
      else this.overrides.set(operation, toLimits(t))
    })
  }
  setInstances(instances: number): Effect.Effect<void, Options.InvalidOptions> {
    return Effect.map(decodeInstances(instances), (n) => {
      this.instanceCount = n
    })
  }
  get instances(): Effect.Effect<number> {
    return Effect.sync(() => this.instanceCount)
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

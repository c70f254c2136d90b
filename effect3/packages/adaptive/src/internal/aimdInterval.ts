import type { Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/interval/AimdInterval"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type * as MetricLabel from "effect/MetricLabel"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as Interval from "effect/ScheduleInterval"
import * as Schema from "effect/Schema"
import type * as A from "../AimdInterval.js"
import { counter, Millis, options, Service, tags } from "./service.js"

/** @internal */
export const TypeId: typeof A.TypeId = Symbol.for("@sluice/adaptive/AimdInterval") as any

const { decode, decodeSync } = options(
  "AimdInterval",
  Schema.Struct({
    name: Schema.optionalWith(Schema.NonEmptyString, { default: () => "default" }),
    min: Millis,
    max: Millis,
    step: Schema.optional(Millis),
    rateStep: Schema.optional(Schema.Number),
    factor: Schema.optional(Schema.Number),
    initial: Schema.optional(Millis)
  }),
  Kernel.issues
)

const intervalGauge = Metric.gauge("sluice_aimd_interval_ms", {
  description: "Current interval of an AIMD interval controller, in milliseconds"
})
const signalCounter = counter(
  "sluice_aimd_interval_signals",
  "Signals received by an AIMD interval controller, tagged throttled=true|false"
)

class AimdIntervalImpl extends Service implements A.Service {
  readonly [TypeId]: A.TypeId = TypeId
  private readonly aimd: Kernel.AimdInterval
  private readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  private readonly throttledTags: ReadonlyArray<MetricLabel.MetricLabel>
  private readonly clearTags: ReadonlyArray<MetricLabel.MetricLabel>
  readonly rateStep: number | undefined
  readonly factor: number
  constructor(
    readonly name: string,
    options: Kernel.Options
  ) {
    super()
    this.aimd = Kernel.make(options)
    this.rateStep = this.aimd.rateStep
    this.factor = this.aimd.factor
    this.tags = tags(["name", name])
    this.throttledTags = tags(["name", name], ["throttled", "true"])
    this.clearTags = tags(["name", name], ["throttled", "false"])
    intervalGauge.unsafeUpdate(this.aimd.interval, this.tags)
  }
  get min() {
    return Duration.millis(this.aimd.min)
  }
  get max() {
    return Duration.millis(this.aimd.max)
  }
  get step() {
    return this.rateStep === undefined ? Duration.millis(this.aimd.step) : undefined
  }
  unsafeSignal(throttled: boolean): number {
    const interval = this.aimd.signal(throttled)
    signalCounter.unsafeUpdate(1, throttled ? this.throttledTags : this.clearTags)
    intervalGauge.unsafeUpdate(interval, this.tags)
    return interval
  }
  unsafeInterval(): number {
    return this.aimd.interval
  }
  signal(throttled: boolean): Effect.Effect<Duration.Duration> {
    return Effect.sync(() => Duration.millis(this.unsafeSignal(throttled)))
  }
  get interval(): Effect.Effect<Duration.Duration> {
    return Effect.sync(() => Duration.millis(this.aimd.interval))
  }
  /** Recurs forever, waiting `next(input)` milliseconds before each recurrence. */
  private every<In>(next: (input: In) => number): Schedule.Schedule<Duration.Duration, In> {
    return Schedule.makeWithState(undefined as void, (now, input: In, state) =>
      Effect.sync(() => {
        const ms = next(input)
        return [state, Duration.millis(ms), ScheduleDecision.continueWith(Interval.after(now + ms))] as const
      })
    )
  }
  get schedule(): Schedule.Schedule<Duration.Duration, unknown> {
    return this.every(() => this.aimd.interval)
  }
  scheduleFrom<In>(isThrottled: (input: In) => boolean): Schedule.Schedule<Duration.Duration, In> {
    return this.every((input: In) => this.unsafeSignal(isThrottled(input)))
  }
}

/** @internal */
export const unsafeMake = (options: A.AimdIntervalOptions): A.Service => {
  const o = decodeSync(options)
  return new AimdIntervalImpl(o.name, o)
}

/** @internal */
export const make = (options: A.AimdIntervalOptions): Effect.Effect<A.Service, Options.InvalidOptions> =>
  Effect.map(decode(options), (o) => new AimdIntervalImpl(o.name, o))

/** @internal */
export const isAimdInterval = (u: unknown): u is A.Service =>
  typeof u === "object" && u !== null && TypeId in u

import { Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/interval/AimdInterval"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import { pipeArguments } from "effect/Pipeable"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as Interval from "effect/ScheduleInterval"
import * as Schema from "effect/Schema"
import type * as A from "../AimdInterval.js"
import { bindMethods } from "./bind.js"

/** @internal */
export const TypeId: typeof A.TypeId = Symbol.for("@sluice/adaptive/AimdInterval") as any

/** @internal */
export const AimdIntervalOptions = Schema.Struct({
  name: Schema.optionalWith(Schema.NonEmptyString, { default: () => "default" }),
  min: Options.PositiveDuration,
  max: Options.PositiveDuration,
  step: Schema.optional(Options.PositiveDuration),
  rateStep: Schema.optional(Options.PositiveNumber),
  factor: Schema.optionalWith(
    Schema.Number.pipe(
      Schema.filter((n) => Number.isFinite(n) && n > 1, {
        message: (issue) => `expected a finite number greater than 1, got ${String(issue.actual)}`
      })
    ),
    { default: () => 2 }
  ),
  initial: Schema.optional(Options.PositiveDuration)
}).pipe(
  Schema.filter((o) => {
    if ((o.step === undefined) === (o.rateStep === undefined)) {
      return { path: ["step"], message: "give exactly one of step (interval) or rateStep (rate)" }
    }
    if (Duration.greaterThan(o.min, o.max)) {
      return { path: ["min"], message: "min must not exceed max" }
    }
    if (
      o.initial !== undefined &&
      (Duration.lessThan(o.initial, o.min) || Duration.greaterThan(o.initial, o.max))
    ) {
      return { path: ["initial"], message: "initial must lie within [min, max]" }
    }
    return undefined
  })
)

const intervalGauge = Metric.gauge("sluice_aimd_interval_ms", {
  description: "Current interval of an AIMD interval controller, in milliseconds"
})
const signalCounter = Metric.counter("sluice_aimd_interval_signals", {
  description: "Signals received by an AIMD interval controller, tagged throttled=true|false",
  incremental: true
})

class AimdIntervalImpl implements A.Service {
  protected readonly bound = bindMethods(this, [
    "unsafeSignal",
    "unsafeInterval",
    "signal",
    "scheduleFrom",
    "pipe"
  ])
  readonly [TypeId]: A.TypeId = TypeId
  private readonly aimd: Kernel.AimdInterval
  private readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  private readonly throttledTags: ReadonlyArray<MetricLabel.MetricLabel>
  private readonly clearTags: ReadonlyArray<MetricLabel.MetricLabel>
  constructor(
    readonly name: string,
    min: Duration.Duration,
    max: Duration.Duration,
    step: Duration.Duration | undefined,
    readonly rateStep: number | undefined,
    readonly factor: number,
    initial: Duration.Duration
  ) {
    this.aimd = Kernel.make({
      min: Duration.toMillis(min),
      max: Duration.toMillis(max),
      step: step === undefined ? undefined : Duration.toMillis(step),
      rateStep,
      factor,
      initial: Duration.toMillis(initial)
    })
    this.tags = [MetricLabel.make("name", name)]
    this.throttledTags = [...this.tags, MetricLabel.make("throttled", "true")]
    this.clearTags = [...this.tags, MetricLabel.make("throttled", "false")]
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
  get schedule(): Schedule.Schedule<Duration.Duration, unknown> {
    return Schedule.makeWithState(undefined as void, (now, _input: unknown, state) =>
      Effect.sync(() => {
        const ms = this.aimd.interval
        return [state, Duration.millis(ms), ScheduleDecision.continueWith(Interval.after(now + ms))] as const
      })
    )
  }
  scheduleFrom<In>(isThrottled: (input: In) => boolean): Schedule.Schedule<Duration.Duration, In> {
    return Schedule.makeWithState(undefined as void, (now, input: In, state) =>
      Effect.sync(() => {
        const ms = this.unsafeSignal(isThrottled(input))
        return [state, Duration.millis(ms), ScheduleDecision.continueWith(Interval.after(now + ms))] as const
      })
    )
  }
  pipe() {
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  }
}

const decodeSync = Options.decodeSync(
  "AimdInterval",
  AimdIntervalOptions as Schema.Schema<any, A.AimdIntervalOptions>
)
const decode = Options.decode(
  "AimdInterval",
  AimdIntervalOptions as Schema.Schema<any, A.AimdIntervalOptions>
)

const build = (o: Schema.Schema.Type<typeof AimdIntervalOptions>): A.Service =>
  new AimdIntervalImpl(o.name, o.min, o.max, o.step, o.rateStep, o.factor, o.initial ?? o.min)

/** @internal */
export const unsafeMake = (options: A.AimdIntervalOptions): A.Service => build(decodeSync(options))

/** @internal */
export const make = (options: A.AimdIntervalOptions): Effect.Effect<A.Service, Options.InvalidOptions> =>
  Effect.map(decode(options), build)

/** @internal */
export const isAimdInterval = (u: unknown): u is A.Service =>
  typeof u === "object" && u !== null && TypeId in u

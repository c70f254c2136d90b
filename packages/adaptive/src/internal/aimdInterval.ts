import { type Options } from "@sluice/core"
import * as Meters from "@sluice/core/shared/Meters"
import * as Kernel from "@sluice/kernel/interval/AimdInterval"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Metric from "effect/Metric"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as A from "../AimdInterval.js"
import { Millis, noContext, options, Service, withDefault } from "./service.js"

/** @internal */
export const TypeId: typeof A.TypeId = Symbol.for("@sluice/adaptive/AimdInterval") as any

const { decode, decodeSync } = options(
  "AimdInterval",
  Schema.Struct({
    name: withDefault(Schema.NonEmptyString, "default"),
    min: Millis,
    max: Millis,
    step: Schema.optional(Millis),
    rateStep: Schema.optional(Schema.Number),
    factor: Schema.optional(Schema.Number),
    initial: Schema.optional(Millis)
  }),
  Kernel.issues
)

const intervalGauge = Meters.gauge(
  "sluice_aimd_interval_ms",
  "Current interval of an AIMD interval controller, in milliseconds"
)
const signalCounter = Meters.counter(
  "sluice_aimd_interval_signals",
  "Signals received by an AIMD interval controller, tagged throttled=true|false"
)

class AimdIntervalImpl extends Service implements A.Service {
  readonly [TypeId]: A.TypeId = TypeId
  private readonly aimd: Kernel.AimdInterval
  private readonly intervalMetric: Metric.Gauge<number>
  private readonly throttledSignals: Metric.Counter<number>
  private readonly clearSignals: Metric.Counter<number>
  readonly rateStep: number | undefined
  readonly factor: number
  constructor(
    readonly name: string,
    options: Kernel.Options,
    private readonly context: Context.Context<never>
  ) {
    super()
    this.aimd = Kernel.make(options)
    this.rateStep = this.aimd.rateStep
    this.factor = this.aimd.factor
    this.intervalMetric = intervalGauge.of({ name })
    this.throttledSignals = signalCounter.of({ name, throttled: "true" })
    this.clearSignals = signalCounter.of({ name, throttled: "false" })
    this.intervalMetric.updateUnsafe(this.aimd.interval, this.context)
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
  signalUnsafe(throttled: boolean): number {
    const interval = this.aimd.signal(throttled)
    ;(throttled ? this.throttledSignals : this.clearSignals).updateUnsafe(1, this.context)
    this.intervalMetric.updateUnsafe(interval, this.context)
    return interval
  }
  intervalUnsafe(): number {
    return this.aimd.interval
  }
  signal(throttled: boolean): Effect.Effect<Duration.Duration> {
    return Effect.sync(() => Duration.millis(this.signalUnsafe(throttled)))
  }
  get interval(): Effect.Effect<Duration.Duration> {
    return Effect.sync(() => Duration.millis(this.aimd.interval))
  }
  /**
   * Recurs forever, waiting `next(input)` milliseconds before each recurrence and outputting
   * that wait. It keeps no state of its own (the controller is the state), so every run of
   * the schedule shares the one step.
   */
  private every<In>(next: (input: In) => number): Schedule.Schedule<Duration.Duration, In> {
    return Schedule.fromStep(
      Effect.succeed((_now: number, input: In) =>
        Effect.sync((): [Duration.Duration, Duration.Duration] => {
          const wait = Duration.millis(next(input))
          return [wait, wait]
        })
      )
    )
  }
  get schedule(): Schedule.Schedule<Duration.Duration, unknown> {
    return this.every(() => this.aimd.interval)
  }
  scheduleFrom<In>(isThrottled: (input: In) => boolean): Schedule.Schedule<Duration.Duration, In> {
    return this.every((input: In) => this.signalUnsafe(isThrottled(input)))
  }
}

/** @internal */
export const makeUnsafe = (options: A.AimdIntervalOptions): A.Service => {
  const o = decodeSync(options)
  return new AimdIntervalImpl(o.name, o, noContext)
}

/** @internal */
export const make = (options: A.AimdIntervalOptions): Effect.Effect<A.Service, Options.InvalidOptions> =>
  Effect.flatMap(decode(options), (o) =>
    Effect.withFiber((fiber) => Effect.succeed(new AimdIntervalImpl(o.name, o, fiber.context)))
  )

/** @internal */
export const isAimdInterval = (u: unknown): u is A.Service =>
  typeof u === "object" && u !== null && TypeId in u

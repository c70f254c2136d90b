import { type Options } from "@sluice/core"
import * as Meters from "@sluice/core/shared/Meters"
import * as Kernel from "@sluice/kernel/sample/ProportionalSampler"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as P from "../ProportionalSampler.js"
import type * as Q from "../QpsSensor.js"
import { QpsSensor } from "../QpsSensor.js"
import { Millis, options, Service, withDefault } from "./service.js"

/** @internal */
export const TypeId: typeof P.TypeId = Symbol.for("@sluice/adaptive/ProportionalSampler") as any

const samplerOptions = options(
  "ProportionalSampler",
  Schema.Struct({
    name: withDefault(Schema.NonEmptyString, "default"),
    goal: Schema.Number,
    updatePeriod: Schema.optional(Millis),
    jitter: Schema.optional(Schema.Number),
    initialRatio: Schema.optional(Schema.Number),
    minRatio: Schema.optional(Schema.Number),
    staleAfter: Schema.optional(Millis),
    staleFloor: Schema.optional(Schema.Number),
    staleDecay: Schema.optional(Schema.Number)
  }),
  Kernel.issues
)
const decodeGoal = options("ProportionalSampler.goal", Schema.Number, Kernel.goalIssues).decode

// jitter 0 draws nothing
const noRandom = () => 0

const sentCounter = Meters.counter("sluice_sampler_sent", "Calls a proportional sampler let through")
const skippedCounter = Meters.counter("sluice_sampler_skipped", "Calls a proportional sampler skipped")
const ratioGauge = Meters.gauge("sluice_sampler_ratio", "Share r of calls a sampler sends")
const modeGauge = Meters.gauge("sluice_sampler_stale", "1 while a sampler's sensor is stale, else 0")

class ProportionalSamplerImpl extends Service implements P.Service {
  readonly [TypeId]: P.TypeId = TypeId
  private readonly sentMetric: Metric.Counter<number>
  private readonly skippedMetric: Metric.Counter<number>
  private readonly ratioMetric: Metric.Gauge<number>
  private readonly modeMetric: Metric.Gauge<number>
  constructor(
    readonly name: string,
    private readonly sensor: Q.Service,
    private readonly sampler: Kernel.ProportionalSampler,
    private readonly context: Context.Context<never>
  ) {
    super()
    const attributes = { name }
    this.sentMetric = sentCounter.of(attributes)
    this.skippedMetric = skippedCounter.of(attributes)
    this.ratioMetric = ratioGauge.of(attributes)
    this.modeMetric = modeGauge.of(attributes)
    this.ratioMetric.updateUnsafe(sampler.ratio, context)
  }
  sampleUnsafe(nowMillis: number): boolean {
    if (!this.sampler.sample()) return false
    this.sensor.recordUnsafe(nowMillis, 1)
    return true
  }
  get sample(): Effect.Effect<boolean> {
    return Effect.clockWith((clock) => Effect.sync(() => this.sampleUnsafe(clock.currentTimeMillisUnsafe())))
  }
  withSampler<A, E, R, B, E2, R2>(
    self: Effect.Effect<A, E, R>,
    onSkip: Effect.Effect<B, E2, R2>
  ): Effect.Effect<A | B, E | E2, R | R2> {
    return Effect.clockWith((clock) =>
      Effect.suspend((): Effect.Effect<A | B, E | E2, R | R2> =>
        this.sampleUnsafe(clock.currentTimeMillisUnsafe()) ? self : onSkip
      )
    )
  }
  ratioUnsafe(): number {
    return this.sampler.ratio
  }
  get ratio(): Effect.Effect<number> {
    return Effect.sync(() => this.sampler.ratio)
  }
  get state(): Effect.Effect<P.SamplerState> {
    return Effect.sync(() => ({
      ratio: this.sampler.ratio,
      goal: this.sampler.goal,
      mode: this.sampler.mode,
      lastReading: this.sampler.lastReading,
      lastGoodAt: this.sampler.lastGoodAt,
      sent: this.sampler.sent,
      skipped: this.sampler.skipped
    }))
  }
  /** One controller step with the reading taken at `nowMillis`. */
  stepUnsafe(nowMillis: number, reading: Option.Option<Q.Reading>): void {
    this.sampler.step(nowMillis, Option.getOrUndefined(reading))
    this.flushMetrics()
  }
  private flushMetrics(): void {
    const { sent, skipped } = this.sampler.drain()
    if (sent > 0) this.sentMetric.updateUnsafe(sent, this.context)
    if (skipped > 0) this.skippedMetric.updateUnsafe(skipped, this.context)
    this.ratioMetric.updateUnsafe(this.sampler.ratio, this.context)
    this.modeMetric.updateUnsafe(this.sampler.mode === "stale" ? 1 : 0, this.context)
  }
  get update(): Effect.Effect<void> {
    return Effect.flatMap(this.sensor.measure, (reading) =>
      Effect.map(Clock.currentTimeMillis, (now) => this.stepUnsafe(now, reading))
    ).pipe(
      Effect.withSpan(
        "sluice.sampler.update",
        { attributes: { name: this.name } },
        { captureStackTrace: false }
      )
    )
  }
  setGoal(goal: number): Effect.Effect<void, Options.InvalidOptions> {
    return Effect.map(decodeGoal(goal), (g) => this.sampler.setGoal(g))
  }
  /** The jittered wait before the next update. */
  get nextDelay(): Effect.Effect<Duration.Duration> {
    return this.sampler.jitter === 0
      ? Effect.succeed(Duration.millis(this.sampler.nextDelay(noRandom)))
      : Effect.map(Random.next, (u) => Duration.millis(this.sampler.nextDelay(() => u)))
  }
}

/** @internal */
export const makeWith = (
  options: P.ProportionalSamplerOptions,
  sensor: Q.Service
): Effect.Effect<P.Service, Options.InvalidOptions, Scope.Scope> =>
  Effect.gen(function* () {
    const o = yield* samplerOptions.decode(options)
    const now = yield* Clock.currentTimeMillis
    const credit = yield* Random.next
    const sampler = new ProportionalSamplerImpl(
      o.name,
      sensor,
      Kernel.make(o, now, () => credit),
      yield* Effect.context<never>()
    )
    yield* Effect.forkScoped(
      Effect.forever(Effect.flatMap(sampler.nextDelay, Effect.sleep).pipe(Effect.andThen(sampler.update)))
    )
    return sampler
  })

/** @internal */
export const make = (
  options: P.ProportionalSamplerOptions
): Effect.Effect<P.Service, Options.InvalidOptions, Scope.Scope | QpsSensor> =>
  Effect.flatMap(QpsSensor, (sensor) => makeWith(options, sensor))

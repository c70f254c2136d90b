import { Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/sample/ProportionalSampler"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import { pipeArguments } from "effect/Pipeable"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as P from "../ProportionalSampler.js"
import type * as Q from "../QpsSensor.js"
import { QpsSensor } from "../QpsSensor.js"
import { bindMethods } from "./bind.js"

/** @internal */
export const TypeId: typeof P.TypeId = Symbol.for("@sluice/adaptive/ProportionalSampler") as any

const PositiveRatio = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && n > 0 && n <= 1, {
    message: (issue) => `expected a ratio in (0, 1], got ${String(issue.actual)}`
  })
)

/** @internal */
export const ProportionalSamplerOptions = Schema.Struct({
  name: Schema.optionalWith(Schema.NonEmptyString, { default: () => "default" }),
  goal: Options.NonNegativeNumber,
  updatePeriod: Schema.optionalWith(Options.PositiveDuration, {
    default: () => Duration.millis(Kernel.defaults.updatePeriod)
  }),
  jitter: Schema.optionalWith(
    Schema.Number.pipe(
      Schema.filter((n) => Number.isFinite(n) && n >= 0 && n < 1, {
        message: (issue) => `expected a ratio in [0, 1), got ${String(issue.actual)}`
      })
    ),
    { default: () => Kernel.defaults.jitter }
  ),
  initialRatio: Schema.optionalWith(PositiveRatio, { default: () => Kernel.defaults.initialRatio }),
  minRatio: Schema.optionalWith(PositiveRatio, { default: () => Kernel.defaults.minRatio }),
  staleAfter: Schema.optional(Options.PositiveDuration),
  staleFloor: Schema.optionalWith(PositiveRatio, { default: () => Kernel.defaults.staleFloor }),
  staleDecay: Schema.optionalWith(PositiveRatio, { default: () => Kernel.defaults.staleDecay })
}).pipe(
  Schema.filter((o) =>
    o.initialRatio < o.minRatio
      ? { path: ["initialRatio"], message: "initialRatio must not be below minRatio" }
      : undefined
  )
)

type Decoded = Schema.Schema.Type<typeof ProportionalSamplerOptions>

// jitter 0 draws nothing
const noRandom = () => 0

const sentCounter = Metric.counter("sluice_sampler_sent", {
  description: "Calls a proportional sampler let through",
  incremental: true
})
const skippedCounter = Metric.counter("sluice_sampler_skipped", {
  description: "Calls a proportional sampler skipped",
  incremental: true
})
const ratioGauge = Metric.gauge("sluice_sampler_ratio", { description: "Share r of calls a sampler sends" })
const modeGauge = Metric.gauge("sluice_sampler_stale", {
  description: "1 while a sampler's sensor is stale, else 0"
})

class ProportionalSamplerImpl implements P.Service {
  protected readonly bound = bindMethods(this, [
    "unsafeSample",
    "unsafeRatio",
    "unsafeStep",
    "setGoal",
    "withSampler",
    "pipe"
  ])
  readonly [TypeId]: P.TypeId = TypeId
  readonly name: string
  private pendingSent = 0
  private pendingSkipped = 0
  private totalSent = 0
  private totalSkipped = 0
  private readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  constructor(
    private readonly o: Decoded,
    private readonly sensor: Q.Service,
    private readonly sampler: Kernel.ProportionalSampler
  ) {
    this.name = o.name
    this.tags = [MetricLabel.make("name", o.name)]
    ratioGauge.unsafeUpdate(sampler.ratio, this.tags)
  }
  unsafeSample(nowMillis: number): boolean {
    if (this.sampler.sample()) {
      this.pendingSent++
      this.sensor.unsafeRecord(nowMillis, 1)
      return true
    }
    this.pendingSkipped++
    return false
  }
  get sample(): Effect.Effect<boolean> {
    return Effect.clockWith((clock) => Effect.sync(() => this.unsafeSample(clock.unsafeCurrentTimeMillis())))
  }
  withSampler<A, E, R, B, E2, R2>(
    self: Effect.Effect<A, E, R>,
    onSkip: Effect.Effect<B, E2, R2>
  ): Effect.Effect<A | B, E | E2, R | R2> {
    return Effect.clockWith((clock) =>
      Effect.suspend((): Effect.Effect<A | B, E | E2, R | R2> =>
        this.unsafeSample(clock.unsafeCurrentTimeMillis()) ? self : onSkip
      )
    )
  }
  unsafeRatio(): number {
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
      sent: this.totalSent + this.pendingSent,
      skipped: this.totalSkipped + this.pendingSkipped
    }))
  }
  /** One controller step with the reading taken at `nowMillis`. */
  unsafeStep(nowMillis: number, reading: Option.Option<Q.Reading>): void {
    this.sampler.step(nowMillis, Option.getOrUndefined(reading))
    this.flushMetrics()
  }
  private flushMetrics(): void {
    if (this.pendingSent > 0) sentCounter.unsafeUpdate(this.pendingSent, this.tags)
    if (this.pendingSkipped > 0) skippedCounter.unsafeUpdate(this.pendingSkipped, this.tags)
    this.totalSent += this.pendingSent
    this.totalSkipped += this.pendingSkipped
    this.pendingSent = 0
    this.pendingSkipped = 0
    ratioGauge.unsafeUpdate(this.sampler.ratio, this.tags)
    modeGauge.unsafeUpdate(this.sampler.mode === "stale" ? 1 : 0, this.tags)
  }
  get update(): Effect.Effect<void> {
    return Effect.flatMap(this.sensor.measure, (reading) =>
      Effect.map(Clock.currentTimeMillis, (now) => this.unsafeStep(now, reading))
    ).pipe(
      Effect.withSpan("sluice.sampler.update", { captureStackTrace: false, attributes: { name: this.name } })
    )
  }
  setGoal(goal: number): Effect.Effect<void, Options.InvalidOptions> {
    return Effect.map(decodeGoal(goal), (g) => this.sampler.setGoal(g))
  }
  /** The jittered wait before the next update. */
  get nextDelay(): Effect.Effect<Duration.Duration> {
    return this.o.jitter === 0
      ? Effect.succeed(Duration.millis(this.sampler.nextDelay(noRandom)))
      : Effect.map(Random.next, (u) => Duration.millis(this.sampler.nextDelay(() => u)))
  }
  pipe() {
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  }
}

const decodeGoal = Options.decode("ProportionalSampler.goal", Options.NonNegativeNumber)
const decode = Options.decode(
  "ProportionalSampler",
  ProportionalSamplerOptions as unknown as Schema.Schema<Decoded, P.ProportionalSamplerOptions>
)

/** @internal */
export const makeWith = (
  options: P.ProportionalSamplerOptions,
  sensor: Q.Service
): Effect.Effect<P.Service, Options.InvalidOptions, Scope.Scope> =>
  Effect.gen(function* () {
    const o = yield* decode(options)
    const now = yield* Clock.currentTimeMillis
    const credit = yield* Random.next
    const rule = Kernel.make(
      {
        ...o,
        updatePeriod: Duration.toMillis(o.updatePeriod),
        staleAfter: o.staleAfter === undefined ? undefined : Duration.toMillis(o.staleAfter)
      },
      now,
      () => credit
    )
    const sampler = new ProportionalSamplerImpl(o, sensor, rule)
    yield* Effect.forkScoped(
      Effect.forever(Effect.flatMap(sampler.nextDelay, Effect.sleep).pipe(Effect.zipRight(sampler.update)))
    )
    return sampler
  })

/** @internal */
export const make = (
  options: P.ProportionalSamplerOptions
): Effect.Effect<P.Service, Options.InvalidOptions, Scope.Scope | QpsSensor> =>
  Effect.flatMap(QpsSensor, (sensor) => makeWith(options, sensor))

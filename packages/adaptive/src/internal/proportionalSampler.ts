import { Options } from "@sluice/core"
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
  updatePeriod: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.seconds(5) }),
  jitter: Schema.optionalWith(
    Schema.Number.pipe(
      Schema.filter((n) => Number.isFinite(n) && n >= 0 && n < 1, {
        message: (issue) => `expected a ratio in [0, 1), got ${String(issue.actual)}`
      })
    ),
    { default: () => 0.1 }
  ),
  initialRatio: Schema.optionalWith(PositiveRatio, { default: () => 1 }),
  minRatio: Schema.optionalWith(PositiveRatio, { default: () => 0.001 }),
  staleAfter: Schema.optional(Options.PositiveDuration),
  staleFloor: Schema.optionalWith(PositiveRatio, { default: () => 0.1 }),
  staleDecay: Schema.optionalWith(PositiveRatio, { default: () => 0.8 })
}).pipe(
  Schema.filter((o) =>
    o.initialRatio < o.minRatio
      ? { path: ["initialRatio"], message: "initialRatio must not be below minRatio" }
      : undefined
  )
)

type Decoded = Schema.Schema.Type<typeof ProportionalSamplerOptions>

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

/** Validity of a reading: a finite, non-negative rate. NaN, ±Infinity and negatives are not measurements. */
const isValid = (r: Q.Reading) => Number.isFinite(r.qps) && r.qps >= 0 && Number.isFinite(r.at)

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
  private r: number
  private goalQps: number
  private credit: number
  private lastGoodAt: number
  private lastReading: Q.Reading | undefined = undefined
  private currentMode: P.Mode = "tracking"
  private pendingSent = 0
  private pendingSkipped = 0
  private totalSent = 0
  private totalSkipped = 0
  private readonly staleAfterMillis: number
  private readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  constructor(
    private readonly o: Decoded,
    private readonly sensor: Q.Service,
    startMillis: number,
    credit: number
  ) {
    this.name = o.name
    this.goalQps = o.goal
    this.r = o.goal === 0 ? o.minRatio : o.initialRatio
    this.currentMode = o.goal === 0 ? "paused" : "tracking"
    this.credit = credit
    this.lastGoodAt = startMillis
    this.staleAfterMillis =
      o.staleAfter === undefined ? 3 * Duration.toMillis(o.updatePeriod) : Duration.toMillis(o.staleAfter)
    this.tags = [MetricLabel.make("name", o.name)]
    ratioGauge.unsafeUpdate(this.r, this.tags)
  }
  unsafeSample(nowMillis: number): boolean {
    // Systematic sampling with a random start: each call is sent with probability r,
    // and over any n calls the share sent is within 1/n of r.
    this.credit += this.r
    if (this.credit >= 1) {
      this.credit -= 1
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
    return this.r
  }
  get ratio(): Effect.Effect<number> {
    return Effect.sync(() => this.r)
  }
  get state(): Effect.Effect<P.SamplerState> {
    return Effect.sync(() => ({
      ratio: this.r,
      goal: this.goalQps,
      mode: this.currentMode,
      lastReading: this.lastReading,
      lastGoodAt: this.lastGoodAt,
      sent: this.totalSent + this.pendingSent,
      skipped: this.totalSkipped + this.pendingSkipped
    }))
  }
  /** One controller step with the reading taken at `nowMillis`. */
  unsafeStep(nowMillis: number, reading: Option.Option<Q.Reading>): void {
    const o = this.o
    const fresh =
      Option.isSome(reading) &&
      isValid(reading.value) &&
      nowMillis - reading.value.at <= this.staleAfterMillis
    if (fresh) {
      this.lastReading = reading.value
      this.lastGoodAt = Math.max(this.lastGoodAt, reading.value.at)
    }
    if (this.goalQps === 0) {
      this.currentMode = "paused"
      this.r = o.minRatio
    } else if (fresh) {
      this.currentMode = "tracking"
      const m = reading.value.qps
      const next = m === 0 ? 1 : (this.r * this.goalQps) / m
      this.r = Math.min(1, Math.max(o.minRatio, next))
    } else if (nowMillis - this.lastGoodAt > this.staleAfterMillis) {
      // Stale: never raise r (no flood gates), and decay only down to the floor, so
      // traffic never stops because a sensor died.
      this.currentMode = "stale"
      if (this.r > o.staleFloor) this.r = Math.max(o.staleFloor, this.r * o.staleDecay)
    }
    // else: a missing reading inside the grace period; hold r.
    this.flushMetrics()
  }
  private flushMetrics(): void {
    if (this.pendingSent > 0) sentCounter.unsafeUpdate(this.pendingSent, this.tags)
    if (this.pendingSkipped > 0) skippedCounter.unsafeUpdate(this.pendingSkipped, this.tags)
    this.totalSent += this.pendingSent
    this.totalSkipped += this.pendingSkipped
    this.pendingSent = 0
    this.pendingSkipped = 0
    ratioGauge.unsafeUpdate(this.r, this.tags)
    modeGauge.unsafeUpdate(this.currentMode === "stale" ? 1 : 0, this.tags)
  }
  get update(): Effect.Effect<void> {
    return Effect.flatMap(this.sensor.measure, (reading) =>
      Effect.map(Clock.currentTimeMillis, (now) => this.unsafeStep(now, reading))
    ).pipe(
      Effect.withSpan("sluice.sampler.update", { captureStackTrace: false, attributes: { name: this.name } })
    )
  }
  setGoal(goal: number): Effect.Effect<void, Options.InvalidOptions> {
    return Effect.map(decodeGoal(goal), (g) => {
      const wasPaused = this.goalQps === 0
      this.goalQps = g
      if (g === 0) {
        this.currentMode = "paused"
        this.r = this.o.minRatio
      } else if (wasPaused) {
        this.currentMode = "tracking"
      }
    })
  }
  /** The jittered wait before the next update. */
  get nextDelay(): Effect.Effect<Duration.Duration> {
    const base = Duration.toMillis(this.o.updatePeriod)
    const j = this.o.jitter
    return j === 0
      ? Effect.succeed(Duration.millis(base))
      : Effect.map(Random.nextRange(1 - j, 1 + j), (f) => Duration.millis(base * f))
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
    const sampler = new ProportionalSamplerImpl(o, sensor, now, credit)
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

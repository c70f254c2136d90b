import { Errors, Options } from "@sluice/core"
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricLabel from "effect/MetricLabel"
import { pipeArguments } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import type * as CL from "../ConcurrencyLimiter.js"
import type * as P from "../Pacer.js"

/** @internal */
export const TypeId: typeof P.TypeId = Symbol.for("@sluice/adaptive/Pacer") as any

const NumberThunk = Schema.declare((u: unknown): u is () => number => typeof u === "function", {
  identifier: "LimitFunction",
  message: () => "expected a function () => number, e.g. () => limiter.limit"
})

const BooleanThunk = Schema.declare((u: unknown): u is () => boolean => typeof u === "function", {
  identifier: "SlowStartFunction",
  message: () => "expected a function () => boolean"
})

/** A smoothing factor in (0, 1]: 1 keeps only the latest sample. */
const Smoothing = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && n > 0 && n <= 1, {
    message: (issue) => `expected a number in (0, 1], got ${String(issue.actual)}`
  })
)

const tuningFields = {
  gain: Schema.optionalWith(Options.PositiveNumber, { default: () => 1 }),
  slowStartGain: Schema.optionalWith(Options.PositiveNumber, { default: () => 1.25 }),
  smoothing: Schema.optionalWith(Smoothing, { default: () => 0.125 }),
  initialRtt: Schema.optional(Options.PositiveDuration),
  maxQueue: Schema.optionalWith(Options.NonNegativeInt, { default: () => 1000 }),
  key: Schema.optionalWith(Schema.String, { default: () => "default" })
}

/** @internal */
export const PacerTuning = Schema.Struct(tuningFields)

/** @internal */
export const PacerOptions = Schema.Struct({
  limit: NumberThunk,
  slowStart: Schema.optional(BooleanThunk),
  ...tuningFields
})

type Config = typeof PacerOptions.Type

const module = "Pacer"
const decodeSync = Options.decodeSync(module, PacerOptions)
const decodeEffect = Options.decode(module, PacerOptions)

// ---------------------------------------------------------------------------
// metrics

const delayHistogram = Metric.histogram(
  "sluice_pacer_delay_ms",
  MetricBoundaries.exponential({ start: 0.5, factor: 2, count: 14 }),
  "How long a departure was held back by the pacer (0 when it left at once)"
)
const queuedGauge = Metric.gauge("sluice_pacer_queued", {
  description: "departures waiting for their paced slot"
})
const intervalGauge = Metric.gauge("sluice_pacer_interval_ms", {
  description: "current spacing between departures: srtt / (gain × limit)"
})
const srttGauge = Metric.gauge("sluice_pacer_srtt_ms", {
  description: "smoothed round-trip time of paced successes"
})
const rejectedCounter = Metric.counter("sluice_pacer_rejected", {
  description: "departures refused because the pacer queue was full",
  incremental: true
})

const queueFull = new Errors.Overloaded({ reason: "pacer queue full", origin: "local" })

class PacerImpl implements P.Pacer {
  readonly [TypeId]: P.TypeId = TypeId
  readonly key: string
  readonly options: Config
  private readonly limitOf: () => number
  private readonly slowStartOf: (() => boolean) | undefined
  private readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  private readonly initialRtt: number | undefined
  /** Earliest time the next departure may leave. */
  nextDeparture = Number.NEGATIVE_INFINITY
  queued = 0
  srtt: number | undefined = undefined

  constructor(config: Config) {
    this.options = config
    this.key = config.key
    this.limitOf = config.limit
    this.slowStartOf = config.slowStart
    this.tags = [MetricLabel.make("key", config.key)]
    this.initialRtt = config.initialRtt === undefined ? undefined : Duration.toMillis(config.initialRtt)
  }

  get gain(): number {
    return this.slowStartOf !== undefined && this.slowStartOf()
      ? this.options.slowStartGain
      : this.options.gain
  }

  get interval(): number {
    const rtt = this.srtt ?? this.initialRtt
    if (rtt === undefined) return 0
    const limit = this.limitOf()
    // No usable limit (0, negative, NaN, unbounded): nothing to spread, do not pace.
    if (!(limit > 0) || !Number.isFinite(limit)) return 0
    return rtt / (this.gain * limit)
  }

  /** RFC 6298 smoothing: the first sample is taken as is. */
  unsafeObserve(rttMillis: number): void {
    if (!(rttMillis >= 0) || !Number.isFinite(rttMillis)) return
    const srtt = this.srtt
    this.srtt = srtt === undefined ? rttMillis : srtt + this.options.smoothing * (rttMillis - srtt)
    srttGauge.unsafeUpdate(this.srtt, this.tags)
  }

  /** Reserves the next departure slot; returns how long to wait, or -1 when the queue is full. */
  unsafeReserve(now: number): number {
    const depart = this.nextDeparture > now ? this.nextDeparture : now
    const delay = depart - now
    if (delay > 0 && this.queued >= this.options.maxQueue) {
      rejectedCounter.unsafeUpdate(1, this.tags)
      return -1
    }
    const interval = this.interval
    this.nextDeparture = depart + interval
    intervalGauge.unsafeUpdate(interval, this.tags)
    delayHistogram.unsafeUpdate(delay, this.tags)
    return delay
  }

  private timed<A, E, R>(self: Effect.Effect<A, E, R>, clock: Clock.Clock): Effect.Effect<A, E, R> {
    const start = clock.unsafeCurrentTimeMillis()
    return Effect.map(self, (a) => {
      this.unsafeObserve(clock.unsafeCurrentTimeMillis() - start)
      return a
    })
  }

  run<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Errors.Overloaded, R> {
    return Effect.clockWith((clock): Effect.Effect<A, E | Errors.Overloaded, R> => {
      const now = clock.unsafeCurrentTimeMillis()
      const delay = this.unsafeReserve(now)
      if (delay === 0) return this.timed(self, clock)
      if (delay < 0) return Effect.fail(queueFull)
      const slotEnd = this.nextDeparture
      const slotStart = now + delay
      this.queued++
      queuedGauge.unsafeUpdate(this.queued, this.tags)
      let waiting = true
      const leave = () => {
        waiting = false
        this.queued--
        queuedGauge.unsafeUpdate(this.queued, this.tags)
      }
      return Effect.sleep(Duration.millis(delay)).pipe(
        // a span per wait (the slow path); an undelayed departure has none
        Effect.withSpan("sluice.pacer.wait", {
          captureStackTrace: false,
          attributes: { key: this.key, delayMs: delay }
        }),
        Effect.zipRight(
          Effect.suspend(() => {
            leave()
            return this.timed(self, clock)
          })
        ),
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            if (!waiting) return
            leave()
            // The last reservation gives its slot back; earlier ones leave a gap that later
            // departures do not close (they keep their reserved times).
            if (this.nextDeparture === slotEnd) this.nextDeparture = slotStart
          })
        )
      )
    })
  }

  pipe() {
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  }
}

/** @internal */
export const unsafeMake = (options: P.PacerOptions): P.Pacer => new PacerImpl(decodeSync(options))

/** @internal */
export const make = (options: P.PacerOptions): Effect.Effect<P.Pacer, Options.InvalidOptions> =>
  Effect.map(decodeEffect(options), (config) => new PacerImpl(config))

const isSlowStartAware = (u: unknown): u is { readonly cwnd: number; readonly ssthresh: number } =>
  typeof u === "object" &&
  u !== null &&
  typeof (u as { cwnd?: unknown }).cwnd === "number" &&
  typeof (u as { ssthresh?: unknown }).ssthresh === "number"

/** @internal */
export const forLimiter = (
  limiter: CL.Limiter,
  options: P.PacerTuning = {}
): Effect.Effect<P.Pacer, Options.InvalidOptions> => {
  const algorithm = limiter.algorithm
  return make({
    key: limiter.key,
    ...options,
    limit: () => limiter.limit,
    ...(isSlowStartAware(algorithm) ? { slowStart: () => algorithm.cwnd < algorithm.ssthresh } : {})
  })
}

/** @internal */
export const paced: {
  (pacer: P.Pacer): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Overloaded, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, pacer: P.Pacer): Effect.Effect<A, E | Errors.Overloaded, R>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, pacer: P.Pacer): Effect.Effect<A, E | Errors.Overloaded, R> =>
    pacer.run(self)
)

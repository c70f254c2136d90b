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
import type * as LA from "../LimitAlgorithm.js"
import type * as P from "../Pacer.js"
import { bindMethods } from "./bind.js"
import { Smoothing } from "./limitAlgorithm.js"

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

const AlgorithmSchema = Schema.declare(
  (u: unknown): u is LA.LimitAlgorithm =>
    typeof u === "object" && u !== null && typeof (u as { onSample?: unknown }).onSample === "function",
  {
    identifier: "LimitAlgorithm",
    message: () => "expected a LimitAlgorithm (with onSample), e.g. limiter.algorithm"
  }
)

/** @internal */
export const PacerOptions = Schema.Struct({
  limit: NumberThunk,
  slowStart: Schema.optional(BooleanThunk),
  algorithm: Schema.optional(AlgorithmSchema),
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
  protected readonly bound = bindMethods(this, [
    "unsafeObserve",
    "unsafeRelease",
    "unsafeReserve",
    "withPacer",
    "pipe"
  ])
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

  /** Departures that leave at once, granted by {@link unsafeRelease}. */
  private burstCredit = 0

  unsafeRelease(k: number, now: number): void {
    if (!Number.isFinite(k) || k === 0) return
    const from = this.nextDeparture > now ? this.nextDeparture : now
    if (k > 0) this.burstCredit += Math.floor(k)
    this.nextDeparture = from + Math.abs(k) * this.interval
  }

  /** Reserves the next departure slot; returns how long to wait, or -1 when the queue is full. */
  unsafeReserve(now: number): number {
    if (this.burstCredit > 0) {
      this.burstCredit--
      delayHistogram.unsafeUpdate(0, this.tags)
      return 0
    }
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

  withPacer<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Errors.Overloaded, R> {
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

// ---------------------------------------------------------------------------
// the algorithm-driven pacer

/** Whether an algorithm drives pacing itself (declares `pacingInterval`). */
const drivesPacing = (algorithm: LA.LimitAlgorithm | undefined): algorithm is LA.LimitAlgorithm =>
  algorithm !== undefined && "pacingInterval" in algorithm

/** Millis below which a departure counts as due (floating-point slack of the schedule). */
const EPSILON = 1e-6

class Waiter {
  resume: ((effect: Effect.Effect<void>) => void) | undefined = undefined
  released = false
  gone = false
}

/**
 * Departures wait in one FIFO and a single timer fiber releases the head every
 * `algorithm.pacingInterval`: unlike the reservation pacer, a change of rate, a
 * burst or a pause applies to every waiter at once, which an algorithm that sets
 * the rate needs when the backlog is long.
 */
class ScheduledPacerImpl implements P.Pacer {
  protected readonly bound = bindMethods(this, ["unsafeObserve", "unsafeRelease", "withPacer", "pipe"])
  readonly [TypeId]: P.TypeId = TypeId
  readonly key: string
  readonly options: Config
  private readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  private readonly waiters: Array<Waiter> = []
  private head = 0
  private armed = false
  private burstCredit = 0
  nextDeparture = Number.NEGATIVE_INFINITY
  queued = 0
  srtt: number | undefined = undefined

  constructor(
    config: Config,
    private readonly algorithm: LA.LimitAlgorithm
  ) {
    this.options = config
    this.key = config.key
    this.tags = [MetricLabel.make("key", config.key)]
  }

  get gain(): number {
    return 1
  }

  /** The algorithm's spacing: 0 when it does not pace, `Infinity` while it holds departures. */
  get interval(): number {
    const interval = this.algorithm.pacingInterval
    return interval !== undefined && interval > 0 ? interval : 0
  }

  unsafeObserve(rttMillis: number): void {
    if (!(rttMillis >= 0) || !Number.isFinite(rttMillis)) return
    const srtt = this.srtt
    this.srtt = srtt === undefined ? rttMillis : srtt + this.options.smoothing * (rttMillis - srtt)
    srttGauge.unsafeUpdate(this.srtt, this.tags)
  }

  unsafeRelease(k: number, now: number): void {
    if (!Number.isFinite(k) || k === 0) return
    const interval = this.interval
    if (Number.isFinite(interval)) {
      const from = this.nextDeparture > now ? this.nextDeparture : now
      this.nextDeparture = from + Math.abs(k) * interval
    }
    if (k > 0) {
      let n = Math.floor(k)
      while (n > 0 && this.releaseHead()) n--
      this.burstCredit += n
    }
  }

  private releaseHead(): boolean {
    while (this.head < this.waiters.length) {
      const waiter = this.waiters[this.head]!
      this.waiters[this.head++] = undefined as any
      if (waiter.gone) continue
      waiter.released = true
      this.queued--
      if (waiter.resume !== undefined) waiter.resume(Effect.void)
      this.compact()
      return true
    }
    this.compact()
    return false
  }

  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.waiters.length) {
      this.waiters.splice(0, this.head)
      this.head = 0
    } else if (this.head === this.waiters.length) {
      this.waiters.length = 0
      this.head = 0
    }
  }

  /** Runs due algorithm timers, applies a burst or pause, releases every departure due by `now`. */
  private tick(now: number): void {
    const algorithm = this.algorithm
    const timer = algorithm.nextTimer
    if (timer !== undefined && timer <= now + EPSILON && algorithm.onTimer !== undefined) {
      algorithm.onTimer(timer > now ? timer : now)
    }
    if (algorithm.takeBurst !== undefined) {
      const k = algorithm.takeBurst(now)
      if (k !== 0) this.unsafeRelease(k, now)
    }
    // `now + EPSILON`: a sleep of `nextDeparture - now` may land a rounding error short.
    const interval = this.interval
    // Holding (`Infinity`): nothing leaves but bursts; when pacing resumes it starts now.
    if (!Number.isFinite(interval)) return this.report()
    if (!Number.isFinite(this.nextDeparture)) this.nextDeparture = now
    while (this.queued > 0 && this.nextDeparture <= now + EPSILON) {
      this.releaseHead()
      const from = this.nextDeparture > now - interval ? this.nextDeparture : now
      this.nextDeparture = from + interval
    }
    this.report()
  }

  private report(): void {
    queuedGauge.unsafeUpdate(this.queued, this.tags)
    intervalGauge.unsafeUpdate(this.interval, this.tags)
  }

  /**
   * The timer fiber lives while departures wait: it wakes at the next departure or
   * the algorithm's timer, whichever is first, and ends when the queue is empty.
   */
  private timerLoop(clock: Clock.Clock): Effect.Effect<void> {
    return Effect.suspend(() => {
      const now = clock.unsafeCurrentTimeMillis()
      this.tick(now)
      const timer = this.algorithm.nextTimer
      const departure = Number.isFinite(this.interval) ? this.nextDeparture : Number.POSITIVE_INFINITY
      const wake = timer !== undefined && timer > now + EPSILON && timer < departure ? timer : departure
      // Nothing waits, or everything is held with no timer: the next arrival or outcome re-arms.
      if (this.queued === 0 || wake === Number.POSITIVE_INFINITY) {
        this.armed = false
        return Effect.void
      }
      return Effect.zipRight(clock.sleep(Duration.millis(Math.max(0, wake - now))), this.timerLoop(clock))
    })
  }

  /**
   * Runs a departure, measures its round trip, and when it settles lets the algorithm's
   * new state act at once (a new rate, the end of a hold, a burst it asked for).
   */
  private timed<A, E, R>(self: Effect.Effect<A, E, R>, clock: Clock.Clock): Effect.Effect<A, E, R> {
    const start = clock.unsafeCurrentTimeMillis()
    return Effect.onExit(self, (exit) => {
      const now = clock.unsafeCurrentTimeMillis()
      if (exit._tag === "Success") this.unsafeObserve(now - start)
      this.tick(now)
      return this.queued > 0 && !this.armed ? this.arm(clock, Effect.void) : Effect.void
    })
  }

  withPacer<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Errors.Overloaded, R> {
    return Effect.clockWith((clock): Effect.Effect<A, E | Errors.Overloaded, R> => {
      const now = clock.unsafeCurrentTimeMillis()
      this.tick(now)
      if (this.queued === 0) {
        if (this.burstCredit > 0) {
          this.burstCredit--
          delayHistogram.unsafeUpdate(0, this.tags)
          return this.timed(self, clock)
        }
        const interval = this.interval
        if (Number.isFinite(interval) && this.nextDeparture <= now + EPSILON) {
          const from = this.nextDeparture > now - interval ? this.nextDeparture : now
          this.nextDeparture = from + interval
          delayHistogram.unsafeUpdate(0, this.tags)
          return this.timed(self, clock)
        }
      }
      if (this.queued >= this.options.maxQueue) {
        rejectedCounter.unsafeUpdate(1, this.tags)
        return Effect.fail(queueFull)
      }
      const waiter = new Waiter()
      this.waiters.push(waiter)
      this.queued++
      queuedGauge.unsafeUpdate(this.queued, this.tags)
      const wait = Effect.async<void>((resume) => {
        if (waiter.released) return resume(Effect.void)
        waiter.resume = resume
        return Effect.sync(() => {
          if (waiter.released || waiter.gone) return
          waiter.gone = true
          this.queued--
          queuedGauge.unsafeUpdate(this.queued, this.tags)
        })
      })
      return this.arm(
        clock,
        Effect.zipRight(
          wait,
          Effect.suspend(() => {
            delayHistogram.unsafeUpdate(clock.unsafeCurrentTimeMillis() - now, this.tags)
            return this.timed(self, clock)
          })
        )
      )
    })
  }

  /** Starts the timer fiber (once) before `effect`. */
  private arm<A, E, R>(clock: Clock.Clock, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    if (this.armed) return effect
    this.armed = true
    return Effect.zipRight(Effect.forkDaemon(this.timerLoop(clock)), effect)
  }

  pipe() {
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  }
}

const makeFrom = (config: Config): P.Pacer =>
  drivesPacing(config.algorithm) ? new ScheduledPacerImpl(config, config.algorithm) : new PacerImpl(config)

/** @internal */
export const unsafeMake = (options: P.PacerOptions): P.Pacer => makeFrom(decodeSync(options))

/** @internal */
export const make = (options: P.PacerOptions): Effect.Effect<P.Pacer, Options.InvalidOptions> =>
  Effect.map(decodeEffect(options), makeFrom)

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
    ...(drivesPacing(algorithm) ? { algorithm } : {}),
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
    pacer.withPacer(self)
)

import { Errors, Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/limit/Pacer"
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
  private readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  private readonly pacer: Kernel.ReservationPacer

  constructor(config: Config) {
    this.options = config
    this.key = config.key
    this.tags = [MetricLabel.make("key", config.key)]
    this.pacer = new Kernel.ReservationPacer({
      gain: config.gain,
      slowStartGain: config.slowStartGain,
      smoothing: config.smoothing,
      initialRtt: config.initialRtt === undefined ? undefined : Duration.toMillis(config.initialRtt),
      maxQueue: config.maxQueue,
      limit: config.limit,
      slowStart: config.slowStart
    })
  }

  get nextDeparture(): number {
    return this.pacer.nextDeparture
  }
  get queued(): number {
    return this.pacer.queued
  }
  get srtt(): number | undefined {
    return this.pacer.srtt
  }
  get gain(): number {
    return this.pacer.gain
  }
  get interval(): number {
    return this.pacer.interval
  }

  unsafeObserve(rttMillis: number): void {
    if (this.pacer.observe(rttMillis)) srttGauge.unsafeUpdate(this.pacer.srtt!, this.tags)
  }

  unsafeRelease(k: number, now: number): void {
    this.pacer.release(k, now)
  }

  /** Reserves the next departure slot; returns how long to wait, or -1 when the queue is full. */
  unsafeReserve(now: number): number {
    const delay = this.pacer.reserve(now)
    if (delay === Kernel.QUEUE_FULL) {
      rejectedCounter.unsafeUpdate(1, this.tags)
      return delay
    }
    const interval = this.pacer.reservedInterval
    if (interval !== undefined) intervalGauge.unsafeUpdate(interval, this.tags)
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
      const pacer = this.pacer
      const slotEnd = pacer.nextDeparture
      const slotStart = now + delay
      pacer.enter()
      queuedGauge.unsafeUpdate(pacer.queued, this.tags)
      let waiting = true
      return Effect.sleep(Duration.millis(delay)).pipe(
        // a span per wait (the slow path); an undelayed departure has none
        Effect.withSpan("sluice.pacer.wait", {
          captureStackTrace: false,
          attributes: { key: this.key, delayMs: delay }
        }),
        Effect.zipRight(
          Effect.suspend(() => {
            waiting = false
            pacer.leave()
            queuedGauge.unsafeUpdate(pacer.queued, this.tags)
            return this.timed(self, clock)
          })
        ),
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            if (!waiting) return
            waiting = false
            pacer.cancel(slotStart, slotEnd)
            queuedGauge.unsafeUpdate(pacer.queued, this.tags)
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

class Waiter {
  resume: ((effect: Effect.Effect<void>) => void) | undefined = undefined
  released = false
  gone = false
}

/**
 * Departures wait in one FIFO and a single timer fiber releases the head every
 * `algorithm.pacingInterval`: unlike the reservation pacer, a change of rate, a
 * burst or a pause applies to every waiter at once, which an algorithm that sets
 * the rate needs when the backlog is long. The kernel's schedule says how many
 * heads leave; this binding holds the waiters and the timer fiber.
 */
class ScheduledPacerImpl implements P.Pacer {
  protected readonly bound = bindMethods(this, ["unsafeObserve", "unsafeRelease", "withPacer", "pipe"])
  readonly [TypeId]: P.TypeId = TypeId
  readonly key: string
  readonly options: Config
  private readonly tags: ReadonlyArray<MetricLabel.MetricLabel>
  private readonly pacer: Kernel.ScheduledPacer
  private readonly waiters: Array<Waiter> = []
  private head = 0
  private armed = false

  constructor(config: Config, algorithm: LA.LimitAlgorithm) {
    this.options = config
    this.key = config.key
    this.tags = [MetricLabel.make("key", config.key)]
    this.pacer = new Kernel.ScheduledPacer(
      { smoothing: config.smoothing, maxQueue: config.maxQueue },
      algorithm
    )
  }

  get gain(): number {
    return 1
  }
  get interval(): number {
    return this.pacer.interval
  }
  get nextDeparture(): number {
    return this.pacer.nextDeparture
  }
  get queued(): number {
    return this.pacer.queued
  }
  get srtt(): number | undefined {
    return this.pacer.srtt
  }

  unsafeObserve(rttMillis: number): void {
    if (this.pacer.observe(rttMillis)) srttGauge.unsafeUpdate(this.pacer.srtt!, this.tags)
  }

  unsafeRelease(k: number, now: number): void {
    this.releaseHeads(this.pacer.release(k, now))
  }

  /** Resumes the next `n` waiters still waiting, in arrival order. */
  private releaseHeads(n: number): void {
    while (n > 0 && this.head < this.waiters.length) {
      const waiter = this.waiters[this.head]!
      this.waiters[this.head++] = undefined as any
      if (waiter.gone) continue
      waiter.released = true
      if (waiter.resume !== undefined) waiter.resume(Effect.void)
      n--
    }
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
    this.releaseHeads(this.pacer.tick(now))
    queuedGauge.unsafeUpdate(this.pacer.queued, this.tags)
    intervalGauge.unsafeUpdate(this.pacer.interval, this.tags)
  }

  /**
   * The timer fiber lives while departures wait: it wakes at the next departure or
   * the algorithm's timer, whichever is first, and ends when the queue is empty.
   */
  private timerLoop(clock: Clock.Clock): Effect.Effect<void> {
    return Effect.suspend(() => {
      const now = clock.unsafeCurrentTimeMillis()
      this.tick(now)
      const wake = this.pacer.wakeAt(now)
      // Nothing waits, or everything is held with no timer: the next arrival or outcome re-arms.
      if (wake === Number.POSITIVE_INFINITY) {
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
      return this.pacer.queued > 0 && !this.armed ? this.arm(clock, Effect.void) : Effect.void
    })
  }

  withPacer<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Errors.Overloaded, R> {
    return Effect.clockWith((clock): Effect.Effect<A, E | Errors.Overloaded, R> => {
      const now = clock.unsafeCurrentTimeMillis()
      this.tick(now)
      const pacer = this.pacer
      const admission = pacer.depart(now)
      if (admission === "depart") {
        delayHistogram.unsafeUpdate(0, this.tags)
        return this.timed(self, clock)
      }
      if (admission === "full") {
        rejectedCounter.unsafeUpdate(1, this.tags)
        return Effect.fail(queueFull)
      }
      const waiter = new Waiter()
      this.waiters.push(waiter)
      queuedGauge.unsafeUpdate(pacer.queued, this.tags)
      const wait = Effect.async<void>((resume) => {
        if (waiter.released) return resume(Effect.void)
        waiter.resume = resume
        return Effect.sync(() => {
          if (waiter.released || waiter.gone) return
          waiter.gone = true
          pacer.leave()
          queuedGauge.unsafeUpdate(pacer.queued, this.tags)
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
  Kernel.drivesPacing(config.algorithm)
    ? new ScheduledPacerImpl(config, config.algorithm)
    : new PacerImpl(config)

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
    ...(Kernel.drivesPacing(algorithm) ? { algorithm } : {}),
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

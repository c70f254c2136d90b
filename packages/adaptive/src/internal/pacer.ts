import { Errors, type Options } from "@sluice/core"
import * as Meters from "@sluice/core/shared/Meters"
import * as Kernel from "@sluice/kernel/limit/Pacer"
import type * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Metric from "effect/Metric"
import { pipeArguments } from "effect/Pipeable"
import type * as CL from "../ConcurrencyLimiter.js"
import type * as P from "../Pacer.js"
import { bindMethods } from "./bind.js"
import { tryConstruct, validator } from "./options.js"
import { noContext } from "./service.js"

/** @internal */
export const TypeId: typeof P.TypeId = Symbol.for("@sluice/adaptive/Pacer") as any

const check = validator<P.PacerOptions, P.PacerConfig>("Pacer", Kernel.configure, ["initialRtt"])

// ---------------------------------------------------------------------------
// metrics

const delayHistogram = Meters.histogram(
  "sluice_pacer_delay_ms",
  "How long a departure was held back by the pacer (0 when it left at once)",
  Metric.exponentialBoundaries({ start: 0.5, factor: 2, count: 14 })
)
const queuedGauge = Meters.gauge("sluice_pacer_queued", "departures waiting for their paced slot")
const intervalGauge = Meters.gauge(
  "sluice_pacer_interval_ms",
  "current spacing between departures: srtt / (gain × limit)"
)
const srttGauge = Meters.gauge("sluice_pacer_srtt_ms", "smoothed round-trip time of paced successes")
const rejectedCounter = Meters.counter(
  "sluice_pacer_rejected",
  "departures refused because the pacer queue was full"
)

/**
 * One pacer's series, built once, so that an update is a registry lookup and nothing more, and
 * the context they are updated in: the one the pacer was made in.
 */
class Metrics {
  readonly delay: Metric.Histogram<number>
  readonly queued: Metric.Gauge<number>
  readonly interval: Metric.Gauge<number>
  readonly srtt: Metric.Gauge<number>
  readonly rejected: Metric.Counter<number>
  constructor(
    key: string,
    readonly context: Context.Context<never>
  ) {
    const attributes = { key }
    this.delay = delayHistogram.of(attributes)
    this.queued = queuedGauge.of(attributes)
    this.interval = intervalGauge.of(attributes)
    this.srtt = srttGauge.of(attributes)
    this.rejected = rejectedCounter.of(attributes)
  }
}

const queueFull = new Errors.Overloaded({ reason: "pacer queue full", origin: "local" })

const bound = ["observeUnsafe", "releaseUnsafe", "withPacer", "pipe"]

class PacerImpl extends Kernel.ReservationPacer implements P.Pacer {
  readonly [TypeId]: P.TypeId = TypeId
  readonly key: string
  private readonly metrics: Metrics

  constructor(
    readonly options: P.PacerConfig,
    context: Context.Context<never>
  ) {
    const initialRtt = options.initialRtt
    super({ ...options, initialRtt: initialRtt === undefined ? undefined : Duration.toMillis(initialRtt) })
    this.key = options.key
    this.metrics = new Metrics(options.key, context)
    bindMethods(this, bound)
  }

  observeUnsafe(rttMillis: number): void {
    if (this.observe(rttMillis)) this.metrics.srtt.updateUnsafe(this.srtt!, this.metrics.context)
  }

  releaseUnsafe(k: number, now: number): void {
    this.release(k, now)
  }

  private timed<A, E, R>(self: Effect.Effect<A, E, R>, clock: Clock.Clock): Effect.Effect<A, E, R> {
    const start = clock.currentTimeMillisUnsafe()
    return Effect.map(self, (a) => {
      this.observeUnsafe(clock.currentTimeMillisUnsafe() - start)
      return a
    })
  }

  withPacer<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Errors.Overloaded, R> {
    return Effect.clockWith((clock): Effect.Effect<A, E | Errors.Overloaded, R> => {
      const now = clock.currentTimeMillisUnsafe()
      const delay = this.reserve(now)
      if (delay === Kernel.QUEUE_FULL) {
        this.metrics.rejected.updateUnsafe(1, this.metrics.context)
        return Effect.fail(queueFull)
      }
      if (this.reservedInterval !== undefined)
        this.metrics.interval.updateUnsafe(this.reservedInterval, this.metrics.context)
      this.metrics.delay.updateUnsafe(delay, this.metrics.context)
      if (delay === 0) return this.timed(self, clock)
      const slot = this.enter(now, delay)
      this.metrics.queued.updateUnsafe(this.queued, this.metrics.context)
      return Effect.sleep(Duration.millis(delay)).pipe(
        // a span per wait (the slow path); an undelayed departure has none
        Effect.withSpan(
          "sluice.pacer.wait",
          { attributes: { key: this.key, delayMs: delay } },
          { captureStackTrace: false }
        ),
        Effect.andThen(
          Effect.suspend(() => {
            this.leave(slot)
            this.metrics.queued.updateUnsafe(this.queued, this.metrics.context)
            return this.timed(self, clock)
          })
        ),
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            if (this.cancel(slot)) this.metrics.queued.updateUnsafe(this.queued, this.metrics.context)
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

class Waiter extends Kernel.Waiter {
  resume: ((effect: Effect.Effect<void>) => void) | undefined = undefined
}

/**
 * Departures wait in the kernel's FIFO and a single timer fiber releases the head every
 * `algorithm.pacingInterval`: unlike the reservation pacer, a change of rate, a burst or a
 * pause applies to every waiter at once, which an algorithm that sets the rate needs when
 * the backlog is long. This binding resumes the waiters and runs the timer fiber.
 */
class ScheduledPacerImpl extends Kernel.ScheduledPacer<Waiter> implements P.Pacer {
  readonly [TypeId]: P.TypeId = TypeId
  readonly key: string
  private readonly metrics: Metrics

  /** Made only for an algorithm that drives pacing ({@link Kernel.drivesPacing}). */
  constructor(
    readonly options: P.PacerConfig,
    context: Context.Context<never>
  ) {
    super(options, options.algorithm!)
    this.key = options.key
    this.metrics = new Metrics(options.key, context)
    bindMethods(this, bound)
  }

  protected override onReleased(waiter: Waiter): void {
    if (waiter.resume !== undefined) waiter.resume(Effect.void)
  }

  observeUnsafe(rttMillis: number): void {
    if (this.observe(rttMillis)) this.metrics.srtt.updateUnsafe(this.srtt!, this.metrics.context)
  }

  releaseUnsafe(k: number, now: number): void {
    this.release(k, now)
  }

  /** Runs due algorithm timers, applies a burst or pause, releases every departure due by `now`. */
  private report(now: number): void {
    this.tick(now)
    this.metrics.queued.updateUnsafe(this.queued, this.metrics.context)
    this.metrics.interval.updateUnsafe(this.interval, this.metrics.context)
  }

  /**
   * The timer fiber lives while departures wait: it wakes at the next departure or
   * the algorithm's timer, whichever is first, and ends when the queue is empty.
   */
  private timerLoop(clock: Clock.Clock): Effect.Effect<void> {
    return Effect.suspend(() => {
      const now = clock.currentTimeMillisUnsafe()
      this.report(now)
      const wake = this.wakeAt(now)
      // Nothing waits, or everything is held with no timer: the next arrival or outcome re-arms.
      if (wake === Number.POSITIVE_INFINITY) return Effect.void
      return Effect.andThen(clock.sleep(Duration.millis(Math.max(0, wake - now))), this.timerLoop(clock))
    })
  }

  /**
   * Runs a departure, measures its round trip, and when it settles lets the algorithm's
   * new state act at once (a new rate, the end of a hold, a burst it asked for).
   */
  private timed<A, E, R>(self: Effect.Effect<A, E, R>, clock: Clock.Clock): Effect.Effect<A, E, R> {
    const start = clock.currentTimeMillisUnsafe()
    return Effect.onExit(self, (exit) => {
      const now = clock.currentTimeMillisUnsafe()
      if (exit._tag === "Success") this.observeUnsafe(now - start)
      this.report(now)
      return this.withTimer(clock, Effect.void)
    })
  }

  withPacer<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Errors.Overloaded, R> {
    return Effect.clockWith((clock): Effect.Effect<A, E | Errors.Overloaded, R> => {
      const now = clock.currentTimeMillisUnsafe()
      this.report(now)
      const admission = this.depart(now)
      if (admission === "depart") {
        this.metrics.delay.updateUnsafe(0, this.metrics.context)
        return this.timed(self, clock)
      }
      if (admission === "full") {
        this.metrics.rejected.updateUnsafe(1, this.metrics.context)
        return Effect.fail(queueFull)
      }
      const waiter = new Waiter()
      this.join(waiter)
      this.metrics.queued.updateUnsafe(this.queued, this.metrics.context)
      const wait = Effect.callback<void>((resume) => {
        if (waiter.released) return resume(Effect.void)
        waiter.resume = resume
        return Effect.sync(() => {
          if (this.abandon(waiter)) this.metrics.queued.updateUnsafe(this.queued, this.metrics.context)
        })
      })
      return this.withTimer(
        clock,
        Effect.andThen(
          wait,
          Effect.suspend(() => {
            this.metrics.delay.updateUnsafe(clock.currentTimeMillisUnsafe() - now, this.metrics.context)
            return this.timed(self, clock)
          })
        )
      )
    })
  }

  /** Starts the timer fiber before `effect` when the kernel says one must run. */
  private withTimer<A, E, R>(clock: Clock.Clock, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    return this.arm() ? Effect.andThen(Effect.forkDetach(this.timerLoop(clock)), effect) : effect
  }

  pipe() {
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  }
}

const makeFrom = (config: P.PacerConfig, context: Context.Context<never>): P.Pacer =>
  Kernel.drivesPacing(config.algorithm)
    ? new ScheduledPacerImpl(config, context)
    : new PacerImpl(config, context)

/** @internal */
export const makeUnsafe = (options: P.PacerOptions): P.Pacer => makeFrom(check(options), noContext)

/** @internal */
export const make = (options: P.PacerOptions): Effect.Effect<P.Pacer, Options.InvalidOptions> =>
  tryConstruct((context) => makeFrom(check(options), context))

/** @internal */
export const forLimiter = (
  limiter: CL.Limiter,
  options: P.PacerTuning = {}
): Effect.Effect<P.Pacer, Options.InvalidOptions> =>
  make({ key: limiter.key, ...options, limit: () => limiter.limit, ...Kernel.pacingOf(limiter.algorithm) })

/** @internal */
export const paced = dual(2, <A, E, R>(self: Effect.Effect<A, E, R>, pacer: P.Pacer) => pacer.withPacer(self))

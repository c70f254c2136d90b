import { Errors, type Options } from "@sluice/core"
import * as Kernel from "@sluice/kernel/limit/Pacer"
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricLabel from "effect/MetricLabel"
import { pipeArguments } from "effect/Pipeable"
import type * as CL from "../ConcurrencyLimiter.js"
import type * as P from "../Pacer.js"
import { bindMethods } from "./bind.js"
import { tryConstruct, validator } from "./options.js"

/** @internal */
export const TypeId: typeof P.TypeId = Symbol.for("@sluice/adaptive/Pacer") as any

const check = validator<P.PacerOptions, P.PacerConfig>("Pacer", Kernel.configure, ["initialRtt"])

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

const bound = ["unsafeObserve", "unsafeRelease", "withPacer", "pipe"]

class PacerImpl extends Kernel.ReservationPacer implements P.Pacer {
  readonly [TypeId]: P.TypeId = TypeId
  readonly key: string
  private readonly tags: ReadonlyArray<MetricLabel.MetricLabel>

  constructor(readonly options: P.PacerConfig) {
    const initialRtt = options.initialRtt
    super({ ...options, initialRtt: initialRtt === undefined ? undefined : Duration.toMillis(initialRtt) })
    this.key = options.key
    this.tags = [MetricLabel.make("key", options.key)]
    bindMethods(this, bound)
  }

  unsafeObserve(rttMillis: number): void {
    if (this.observe(rttMillis)) srttGauge.unsafeUpdate(this.srtt!, this.tags)
  }

  unsafeRelease(k: number, now: number): void {
    this.release(k, now)
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
      const delay = this.reserve(now)
      if (delay === Kernel.QUEUE_FULL) {
        rejectedCounter.unsafeUpdate(1, this.tags)
        return Effect.fail(queueFull)
      }
      if (this.reservedInterval !== undefined) intervalGauge.unsafeUpdate(this.reservedInterval, this.tags)
      delayHistogram.unsafeUpdate(delay, this.tags)
      if (delay === 0) return this.timed(self, clock)
      const slot = this.enter(now, delay)
      queuedGauge.unsafeUpdate(this.queued, this.tags)
      return Effect.sleep(Duration.millis(delay)).pipe(
        // a span per wait (the slow path); an undelayed departure has none
        Effect.withSpan("sluice.pacer.wait", {
          captureStackTrace: false,
          attributes: { key: this.key, delayMs: delay }
        }),
        Effect.zipRight(
          Effect.suspend(() => {
            this.leave(slot)
            queuedGauge.unsafeUpdate(this.queued, this.tags)
            return this.timed(self, clock)
          })
        ),
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            if (this.cancel(slot)) queuedGauge.unsafeUpdate(this.queued, this.tags)
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
  private readonly tags: ReadonlyArray<MetricLabel.MetricLabel>

  /** Made only for an algorithm that drives pacing ({@link Kernel.drivesPacing}). */
  constructor(readonly options: P.PacerConfig) {
    super(options, options.algorithm!)
    this.key = options.key
    this.tags = [MetricLabel.make("key", options.key)]
    bindMethods(this, bound)
  }

  protected override onReleased(waiter: Waiter): void {
    if (waiter.resume !== undefined) waiter.resume(Effect.void)
  }

  unsafeObserve(rttMillis: number): void {
    if (this.observe(rttMillis)) srttGauge.unsafeUpdate(this.srtt!, this.tags)
  }

  unsafeRelease(k: number, now: number): void {
    this.release(k, now)
  }

  /** Runs due algorithm timers, applies a burst or pause, releases every departure due by `now`. */
  private report(now: number): void {
    this.tick(now)
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
      this.report(now)
      const wake = this.wakeAt(now)
      // Nothing waits, or everything is held with no timer: the next arrival or outcome re-arms.
      if (wake === Number.POSITIVE_INFINITY) return Effect.void
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
      this.report(now)
      return this.withTimer(clock, Effect.void)
    })
  }

  withPacer<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Errors.Overloaded, R> {
    return Effect.clockWith((clock): Effect.Effect<A, E | Errors.Overloaded, R> => {
      const now = clock.unsafeCurrentTimeMillis()
      this.report(now)
      const admission = this.depart(now)
      if (admission === "depart") {
        delayHistogram.unsafeUpdate(0, this.tags)
        return this.timed(self, clock)
      }
      if (admission === "full") {
        rejectedCounter.unsafeUpdate(1, this.tags)
        return Effect.fail(queueFull)
      }
      const waiter = new Waiter()
      this.join(waiter)
      queuedGauge.unsafeUpdate(this.queued, this.tags)
      const wait = Effect.async<void>((resume) => {
        if (waiter.released) return resume(Effect.void)
        waiter.resume = resume
        return Effect.sync(() => {
          if (this.abandon(waiter)) queuedGauge.unsafeUpdate(this.queued, this.tags)
        })
      })
      return this.withTimer(
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

  /** Starts the timer fiber before `effect` when the kernel says one must run. */
  private withTimer<A, E, R>(clock: Clock.Clock, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    return this.arm() ? Effect.zipRight(Effect.forkDaemon(this.timerLoop(clock)), effect) : effect
  }

  pipe() {
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  }
}

const makeFrom = (config: P.PacerConfig): P.Pacer =>
  Kernel.drivesPacing(config.algorithm) ? new ScheduledPacerImpl(config) : new PacerImpl(config)

/** @internal */
export const unsafeMake = (options: P.PacerOptions): P.Pacer => makeFrom(check(options))

/** @internal */
export const make = (options: P.PacerOptions): Effect.Effect<P.Pacer, Options.InvalidOptions> =>
  tryConstruct(() => makeFrom(check(options)))

/** @internal */
export const forLimiter = (
  limiter: CL.Limiter,
  options: P.PacerTuning = {}
): Effect.Effect<P.Pacer, Options.InvalidOptions> =>
  make({ key: limiter.key, ...options, limit: () => limiter.limit, ...Kernel.pacingOf(limiter.algorithm) })

/** @internal */
export const paced = dual(2, <A, E, R>(self: Effect.Effect<A, E, R>, pacer: P.Pacer) => pacer.withPacer(self))

/**
 * Exponentially weighted statistics, with time as a parameter.
 *
 * - `Ewma`: a time-decayed moving average of samples (latency, utilization): a sample taken
 *   `dt` after the previous one has weight `1 − exp(−dt / tau)`, so irregularly spaced samples
 *   weigh by the time they stand for, not by their number.
 * - `EwmaRate`: an exponentially weighted events-per-second rate, like the classic 1/5/15-minute
 *   load averages of Unix and of Dropwizard Metrics' `EWMA`: events are counted and folded into
 *   the rate once per tick (default 5 s) with weight `1 − exp(−tick / window)`. The threshold
 *   monitor's moving rate is one.
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"

/**
 * The options of a moving average as its users write them: its time constant `tau` (a positive,
 * finite duration).
 *
 * @since 0.2.0
 */
export const options = {
  tau: Field.duration(Field.required<number>(Field.positiveDuration))
}

/**
 * The options of a moving rate as its users write them: the averaging `window` and the `tick`
 * (default 5 seconds), both positive and finite; see {@link tickIssue}.
 *
 * @since 0.2.0
 */
export const rateOptions = {
  window: Field.duration(Field.required<number>(Field.positiveDuration)),
  tick: Field.duration(Field.withDefault(Field.positiveDuration, 5_000))
}

/**
 * The problem with a tick longer than the window (a tick folds in more than the window
 * remembers).
 *
 * @since 0.2.0
 */
export const tickIssue = (windowMillis: number, tickMillis: number): string | undefined =>
  tickMillis <= windowMillis ? undefined : "tick must not exceed window"

/**
 * @since 0.2.0
 */
export interface EwmaOptions {
  /** The time constant in milliseconds (positive, finite): a sample's weight decays by 1/e over it. */
  readonly tauMillis: number
}

/**
 * A time-decayed moving average. Mutable: the owner passes the time (`now`, epoch
 * milliseconds) to every update.
 *
 * @since 0.2.0
 */
export class Ewma {
  /** The time constant, in milliseconds. */
  readonly tauMillis: number
  private current: number | undefined = undefined
  private lastMillis = 0

  /** Throws a `RangeError` for a `tauMillis` that is not positive and finite ({@link options}). */
  constructor(input: EwmaOptions) {
    this.tauMillis = Field.resolveOrThrow({ tauMillis: options.tau }, input).tauMillis
  }

  /** Folds `sample` in at `now`; the first sample sets the value, a non-finite one is ignored. */
  update(now: number, sample: number): void {
    if (!Number.isFinite(sample)) return
    if (this.current === undefined) {
      this.current = sample
    } else {
      const dt = Math.max(0, now - this.lastMillis)
      const alpha = 1 - Math.exp(-dt / this.tauMillis)
      this.current += alpha * (sample - this.current)
    }
    this.lastMillis = Math.max(this.lastMillis, now)
  }

  /** The current average, or `undefined` before the first sample. */
  value(): number | undefined {
    return this.current
  }
}

// The rate's options in milliseconds, as the constructor takes them.
const rateSpec = { windowMillis: rateOptions.window, tickMillis: rateOptions.tick }

/**
 * @since 0.2.0
 */
export interface EwmaRateOptions {
  /** The averaging window in milliseconds (e.g. five minutes): positive and finite. */
  readonly windowMillis: number
  /** How often counted events are folded in, in milliseconds: positive, at most the window; default 5000. */
  readonly tickMillis?: number | undefined
}

/**
 * An exponentially weighted rate of events per second. Mutable: the owner passes the time
 * (`now`, epoch milliseconds) to every call.
 *
 * @since 0.2.0
 */
export class EwmaRate {
  /** The averaging window, in milliseconds. */
  readonly windowMillis: number
  /** The tick, in milliseconds. */
  readonly tickMillis: number
  private readonly alpha: number
  private pending = 0
  private ratePerMs = 0
  private initialized = false
  private tickIndex: number | undefined = undefined

  /**
   * Throws a `RangeError` naming the field for a bad window or tick, or a tick longer than the
   * window ({@link rateOptions}, {@link tickIssue}).
   */
  constructor(input: EwmaRateOptions) {
    const { tickMillis, windowMillis } = Field.resolveOrThrow(rateSpec, input, [], (o) =>
      Field.fields([["tickMillis", o.tickMillis, () => tickIssue(o.windowMillis, o.tickMillis)]])
    )
    this.windowMillis = windowMillis
    this.tickMillis = tickMillis
    this.alpha = 1 - Math.exp(-tickMillis / windowMillis)
  }

  private catchUp(now: number): void {
    const index = Math.floor(now / this.tickMillis)
    if (this.tickIndex === undefined) {
      this.tickIndex = index
      return
    }
    const elapsed = index - this.tickIndex
    if (elapsed <= 0) return
    // The first elapsed tick folds in what was counted; the rest were silent.
    const instant = this.pending / this.tickMillis
    this.pending = 0
    if (this.initialized) {
      this.ratePerMs += this.alpha * (instant - this.ratePerMs)
    } else {
      this.ratePerMs = instant
      this.initialized = true
    }
    if (elapsed > 1) this.ratePerMs *= Math.pow(1 - this.alpha, elapsed - 1)
    this.tickIndex = index
  }

  /** Counts `n` events (default 1) at `now`. */
  mark(now: number, n = 1): void {
    this.catchUp(now)
    this.pending += n
  }

  /** Events per second at `now`. */
  rate(now: number): number {
    this.catchUp(now)
    return this.ratePerMs * 1000
  }
}

/**
 * The AIMD interval: the delay between runs of periodic work (an auto-save, a poll) that
 * follows a server's back-pressure signal. A throttle signal multiplies the interval by
 * `factor` up to `max` (the rate is cut multiplicatively); a clear signal shrinks it back
 * toward `min` (the rate creeps back).
 *
 * Two ways to creep back. With a fixed `step` off the *interval*, a client that runs more
 * often also shrinks its interval more often, so among clients following one signal the
 * fast ones get faster: they are equal only when pinned to a bound. With `rateStep`, the
 * *rate* `1/I` grows by `rateStep` per second of the interval just waited (a linear ramp in
 * time, the same for every client) — classic AIMD on the rate (Chiu and Jain), under which
 * clients sharing a capacity converge to equal rates, since each throttle cuts a fast
 * client by more.
 *
 * Durations are milliseconds; `rateStep` is runs per second gained per second waited.
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"

/**
 * Options, durations in milliseconds: `0 < min ≤ max`, exactly one of `step`
 * (> 0, subtracted from the interval on a clear signal) or `rateStep` (> 0), `factor` > 1
 * (default 2), `initial` within `[min, max]` (default `min`).
 *
 * @since 0.2.0
 */
export interface Options {
  readonly min: number
  readonly max: number
  readonly step?: number | undefined
  readonly rateStep?: number | undefined
  readonly factor?: number | undefined
  readonly initial?: number | undefined
}

/**
 * The rule's constants, resolved from `Options`.
 *
 * @since 0.2.0
 */
export interface Config {
  readonly min: number
  readonly max: number
  /** The interval step in milliseconds; 0 in `rateStep` mode. */
  readonly step: number
  /** The rate step in runs per second per second; `undefined` in interval-step mode. */
  readonly rateStep: number | undefined
  readonly factor: number
}

/**
 * The interval after one signal. In `rateStep` mode the rate `1/I` grows by
 * `rateStep × I` (`I` in seconds) on a clear signal.
 *
 * @since 0.2.0
 */
export const next = (config: Config, interval: number, throttled: boolean): number =>
  throttled
    ? Math.min(config.max, interval * config.factor)
    : config.rateStep === undefined
      ? Math.max(config.min, interval - config.step)
      : // rate 1/I (per ms) grows by rateStep per second (per 10^6 ms²) over the interval just waited
        Math.max(config.min, 1 / (1 / interval + (config.rateStep / 1e6) * interval))

/**
 * An AIMD interval controller: the current interval and the signals that move it.
 *
 * @since 0.2.0
 */
export interface AimdInterval extends Config {
  /** The current interval, in milliseconds. */
  readonly interval: number
  /** Applies one signal and returns the new interval, in milliseconds. */
  readonly signal: (throttled: boolean) => number
}

class AimdIntervalImpl implements AimdInterval {
  readonly step: number
  readonly rateStep: number | undefined
  readonly factor: number
  interval: number
  constructor(
    readonly min: number,
    readonly max: number,
    options: Options
  ) {
    this.step = options.step ?? 0
    this.rateStep = options.rateStep
    this.factor = options.factor ?? 2
    this.interval = options.initial ?? min
    this.signal = this.signal.bind(this)
  }
  signal(throttled: boolean): number {
    return (this.interval = next(this, this.interval, throttled))
  }
}

const factor = Field.expecting((n) => Number.isFinite(n) && n > 1, "a finite number greater than 1")

/**
 * Every problem with `options`, each naming its field.
 *
 * @since 0.2.0
 */
export const issues = (options: Options): Array<Field.Issue> => {
  const { initial, max, min, rateStep, step } = options
  const found = Field.fields([
    ["min", min, Field.positiveDuration],
    ["max", max, Field.positiveDuration],
    ["step", step, Field.positiveDuration],
    ["rateStep", rateStep, Field.positive],
    ["factor", options.factor, factor],
    ["initial", initial, Field.positiveDuration]
  ])
  if (found.length > 0) return found
  if ((step === undefined) === (rateStep === undefined))
    found.push({ path: ["step"], message: "give exactly one of step (interval) or rateStep (rate)" })
  if (min > max) found.push({ path: ["min"], message: "min must not exceed max" })
  else if (initial !== undefined && (initial < min || initial > max))
    found.push({ path: ["initial"], message: "initial must lie within [min, max]" })
  return found
}

/**
 * Makes a controller. Throws a `RangeError` for options with `issues` (bindings check them
 * first and report every field).
 *
 * @since 0.2.0
 */
export const make = (options: Options): AimdInterval => {
  Field.orThrow(issues(options))
  return new AimdIntervalImpl(options.min, options.max, options)
}

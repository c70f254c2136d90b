/**
 * The threshold monitor's rule, a server's back-pressure signal: per operation, a moving
 * rate of successful calls (exponentially weighted, five minutes by default, like a load
 * average) and the median latency of successful calls are compared with thresholds; while
 * either passes its threshold, the operation is *exceeded* and responses carry the throttle
 * signal, so periodic clients back off.
 *
 * - Only successes are measured: failures are fast and would pull the median down and
 *   hide an overload.
 * - Thresholds change at run time, for every operation or for one.
 * - The rate threshold is a total for the whole service: each instance compares its own
 *   rate with `rate / instances`. The latency threshold is a median and is not divided.
 *
 * The rate and the median are arguments: whoever keeps the windows (an EWMA rate and a
 * latency window per operation) passes their values in.
 *
 * @since 0.2.0
 */

/**
 * Thresholds of one operation; an absent one is never exceeded. `rate`: successful calls
 * per second across all instances (> 0); `latency`: the median latency in ms (> 0).
 *
 * @since 0.2.0
 */
export interface Limits {
  readonly rate?: number | undefined
  readonly latency?: number | undefined
}

/**
 * An operation judged: this instance's rate threshold (`rate / instances`), the latency
 * threshold, the instance count, and whether either threshold is passed.
 *
 * @since 0.2.0
 */
export interface Judgement {
  readonly rateThreshold: number | undefined
  readonly latencyThreshold: number | undefined
  readonly instances: number
  readonly exceeded: boolean
}

/**
 * Judges a rate (calls per second) and a median latency (ms, `undefined` without samples)
 * against `limits` on one of `instances` instances.
 *
 * @since 0.2.0
 */
export const judge = (
  limits: Limits,
  instances: number,
  rate: number,
  median: number | undefined
): Judgement => {
  const rateThreshold = limits.rate === undefined ? undefined : limits.rate / instances
  const latencyThreshold = limits.latency
  const exceeded =
    (rateThreshold !== undefined && rate > rateThreshold) ||
    (latencyThreshold !== undefined && median !== undefined && median > latencyThreshold)
  return { rateThreshold, latencyThreshold, instances, exceeded }
}

/**
 * Validated options: default `thresholds`, per-`operations` overrides, the number of
 * running `instances` (a positive integer, default 1).
 *
 * @since 0.2.0
 */
export interface Options {
  readonly thresholds?: Limits | undefined
  readonly operations?: Readonly<Record<string, Limits>> | undefined
  readonly instances?: number | undefined
}

/**
 * A monitor's thresholds, changeable at run time, and the rule that judges operations.
 *
 * @since 0.2.0
 */
export interface ThresholdMonitor {
  /** The number of running instances the rate threshold is divided by. */
  readonly instances: number
  /** The thresholds `operation` is judged by (its own, or the defaults). */
  readonly limits: (operation: string) => Limits
  /** Replaces the thresholds of `operation`, or the defaults when no operation is given. */
  readonly setThresholds: (limits: Limits, operation?: string) => void
  /** Follows scaling: a positive integer. */
  readonly setInstances: (instances: number) => void
  /** Judges `operation`'s rate and median latency. */
  readonly judge: (operation: string, rate: number, median: number | undefined) => Judgement
}

const checkLimits = (limits: Limits): Limits => {
  for (const [field, value] of [
    ["rate", limits.rate],
    ["latency", limits.latency]
  ] as const) {
    if (value !== undefined && !(Number.isFinite(value) && value > 0))
      throw new RangeError(`expected a positive ${field} threshold, got ${value}`)
  }
  return { rate: limits.rate, latency: limits.latency }
}

const checkInstances = (instances: number): number => {
  if (!(Number.isSafeInteger(instances) && instances > 0))
    throw new RangeError(`expected a positive integer instances, got ${instances}`)
  return instances
}

/**
 * Makes a monitor. Throws a `RangeError` for options outside the rules of `Options`
 * (bindings validate them first and report the field).
 *
 * @since 0.2.0
 */
export const make = (options: Options = {}): ThresholdMonitor => {
  let defaults = checkLimits(options.thresholds ?? {})
  const overrides = new Map<string, Limits>()
  for (const [operation, limits] of Object.entries(options.operations ?? {})) {
    overrides.set(operation, checkLimits(limits))
  }
  let instances = checkInstances(options.instances ?? 1)
  const limits = (operation: string) => overrides.get(operation) ?? defaults
  return {
    get instances() {
      return instances
    },
    limits,
    setThresholds: (next, operation) => {
      if (operation === undefined) defaults = checkLimits(next)
      else overrides.set(operation, checkLimits(next))
    },
    setInstances: (n) => {
      instances = checkInstances(n)
    },
    judge: (operation, rate, median) => judge(limits(operation), instances, rate, median)
  }
}

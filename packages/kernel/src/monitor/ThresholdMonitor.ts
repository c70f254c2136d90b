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
 * Per operation, `Operation` keeps the windows: an `EwmaRate` and a `LatencyWindow`
 * (`stats/`), whose median is re-read at most once per second (in between, the last value
 * read is used), so consulting the monitor on every response stays cheap. `judge` also takes
 * a rate and a median from any other source.
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"
import { EwmaRate, tickIssue } from "../stats/Ewma.js"
import { LatencyWindow } from "../stats/LatencyWindow.js"

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
 * Options, each optional: default `thresholds`, per-`operations` overrides, the number of
 * running `instances` (a positive integer, default 1), and the windows of each operation:
 * the rate's `window` and `tick` (ms, `tick ≤ window`), the median's `latencyWindow` (ms).
 *
 * @since 0.2.0
 */
export interface Options {
  readonly thresholds?: Limits | undefined
  readonly operations?: Readonly<Record<string, Limits>> | undefined
  readonly instances?: number | undefined
  readonly window?: number | undefined
  readonly tick?: number | undefined
  readonly latencyWindow?: number | undefined
}

/**
 * The defaults bindings fill in: a five-minute rate with a five-second tick, like a load
 * average, and the median over the last minute.
 *
 * @since 0.2.0
 */
export const defaults = {
  window: 300_000,
  tick: 5_000,
  latencyWindow: 60_000
} as const

// How often an operation's median is re-read, and its figures reported.
const REFRESH_MILLIS = 1000

/**
 * Every problem with thresholds given at `path` (`["thresholds"]` in the options).
 *
 * @since 0.2.0
 */
export const limitsIssues = (
  limits: Limits | undefined,
  path: ReadonlyArray<string> = []
): Array<Field.Issue> =>
  Field.fields([
    [[...path, "rate"], limits?.rate, Field.positive],
    [[...path, "latency"], limits?.latency, Field.positiveDuration]
  ])

/**
 * The problem with an instance count, if any: a positive integer.
 *
 * @since 0.2.0
 */
export const instancesIssues = (instances: number | undefined): Array<Field.Issue> =>
  Field.fields([["instances", instances, Field.positiveInt]])

/**
 * Every problem with `options`, each naming its field; `tick` must not exceed `window`
 * (defaults included).
 *
 * @since 0.2.0
 */
export const issues = (options: Options): Array<Field.Issue> => {
  const found = [
    ...limitsIssues(options.thresholds, ["thresholds"]),
    ...Object.entries(options.operations ?? {}).flatMap(([op, limits]) =>
      limitsIssues(limits, ["operations", op])
    ),
    ...instancesIssues(options.instances),
    ...Field.fields([
      ["window", options.window, Field.positiveDuration],
      ["tick", options.tick, Field.positiveDuration],
      ["latencyWindow", options.latencyWindow, Field.positiveDuration]
    ])
  ]
  // the monitor's rate is an EwmaRate over `window` ticked every `tick`: its rule applies
  const tick =
    found.length === 0
      ? tickIssue(options.window ?? defaults.window, options.tick ?? defaults.tick)
      : undefined
  if (tick !== undefined) found.push({ path: ["tick"], message: tick })
  return found
}

/**
 * The sizes of an operation's windows, in milliseconds.
 *
 * @since 0.2.0
 */
export interface Windows {
  readonly window: number
  readonly tick: number
  readonly latencyWindow: number
}

/**
 * One operation's windows: the weighted rate of successful calls and their latencies.
 * Mutable; the owner passes the time (`now`, epoch ms) to every call.
 *
 * @since 0.2.0
 */
export class Operation {
  readonly rate: EwmaRate
  readonly latencies: LatencyWindow
  private cachedMedian: number | undefined = undefined
  private medianAt = Number.NEGATIVE_INFINITY
  private unseen = false
  private reportedAt = Number.NEGATIVE_INFINITY
  private reportedExceeded = false
  constructor(
    readonly name: string,
    windows: Windows
  ) {
    this.rate = new EwmaRate({ windowMillis: windows.window, tickMillis: windows.tick })
    this.latencies = new LatencyWindow({ windowMillis: windows.latencyWindow })
  }
  /** Records one successful call at `now` that took `latency` ms. */
  record(now: number, latency: number): void {
    this.rate.mark(now, 1)
    this.latencies.record(now, latency)
    if (this.cachedMedian === undefined) this.unseen = true
  }
  /** The median latency, re-read from the window at most once per second (and at once after a first sample). */
  median(now: number): number | undefined {
    if (this.unseen || now - this.medianAt >= REFRESH_MILLIS) {
      this.cachedMedian = this.latencies.quantile(now, 0.5)
      this.medianAt = now
      this.unseen = false
    }
    return this.cachedMedian
  }
  /** Whether figures read at `now` are due to be reported (gauges): at most once per second. */
  reportDue(now: number): boolean {
    if (now - this.reportedAt < REFRESH_MILLIS) return false
    this.reportedAt = now
    return true
  }
  /** Whether `exceeded` differs from the state last reported: a crossing, reported once. */
  crossed(exceeded: boolean): boolean {
    if (exceeded === this.reportedExceeded) return false
    this.reportedExceeded = exceeded
    return true
  }
}

/**
 * An operation's figures at one time, judged.
 *
 * @since 0.2.0
 */
export interface Stats extends Judgement {
  readonly operation: string
  readonly rate: number
  readonly median: number | undefined
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
  /** The sizes of each operation's windows. */
  readonly windows: Windows
  /** The windows of an operation, sized by the options: made on first use, then kept. */
  readonly operation: (name: string) => Operation
  /** Reads `operation`'s windows at `now` and judges them. */
  readonly stats: (operation: Operation, now: number) => Stats
}

/**
 * Makes a monitor. Throws a `RangeError` for options with `issues` (bindings check them
 * first and report every field); so do `setThresholds` and `setInstances`.
 *
 * @since 0.2.0
 */
export const make = (options: Options = {}): ThresholdMonitor => {
  Field.orThrow(issues(options))
  const copy = (limits: Limits): Limits => ({ rate: limits.rate, latency: limits.latency })
  let common = copy(options.thresholds ?? {})
  const overrides = new Map<string, Limits>()
  for (const [operation, limits] of Object.entries(options.operations ?? {}))
    overrides.set(operation, copy(limits))
  let instances = options.instances ?? 1
  const windows: Windows = {
    window: options.window ?? defaults.window,
    tick: options.tick ?? defaults.tick,
    latencyWindow: options.latencyWindow ?? defaults.latencyWindow
  }
  const operations = new Map<string, Operation>()
  const limits = (operation: string) => overrides.get(operation) ?? common
  const judgeOf = (operation: string, rate: number, median: number | undefined) =>
    judge(limits(operation), instances, rate, median)
  return {
    get instances() {
      return instances
    },
    limits,
    setThresholds: (next, operation) => {
      Field.orThrow(limitsIssues(next))
      if (operation === undefined) common = copy(next)
      else overrides.set(operation, copy(next))
    },
    setInstances: (n) => {
      Field.orThrow(instancesIssues(n))
      instances = n
    },
    judge: judgeOf,
    windows,
    operation: (name) => {
      let operation = operations.get(name)
      if (operation === undefined) operations.set(name, (operation = new Operation(name, windows)))
      return operation
    },
    stats: (operation, now) => {
      const rate = operation.rate.rate(now)
      const median = operation.median(now)
      return { operation: operation.name, rate, median, ...judgeOf(operation.name, rate, median) }
    }
  }
}

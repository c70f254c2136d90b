/**
 * The proportional sampler: a worker sends a share `r` of its optional work so that all
 * workers together send about a goal rate `G`. Given the measured (smoothed) rate `M` of
 * work sent, each periodic update sets `r ← clamp(r × G / M, minRatio, 1)`; `M` may be the
 * sum over every worker (a shared sensor), so no worker needs to know how many there are.
 * Updates are spaced by the period times a random factor in `[1 − jitter, 1 + jitter)`,
 * so workers that started together do not all correct at once.
 *
 * Two states must not silently stop all traffic or open the flood gates:
 * - a stale sensor (no valid reading younger than `staleAfter`): `r` is held, then decays
 *   by `staleDecay` per update down to `staleFloor`, and is never raised — the work keeps
 *   a trickle, and the sampler resumes from where it is once readings return;
 * - `G = 0` (paused): `r` is `minRatio`, a probe trickle, until the goal changes.
 *
 * Each call is sent by systematic sampling with a random start: over any `n` calls the
 * share sent is within `1/n` of `r`.
 *
 * Times are epoch milliseconds; rates are calls per second.
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"

/**
 * `"tracking"`: following the sensor; `"stale"`: the sensor is stale; `"paused"`: goal 0.
 *
 * @since 0.2.0
 */
export type Mode = "tracking" | "stale" | "paused"

/**
 * A measurement of the rate of work sent: `qps` calls per second, taken at `at`.
 *
 * @since 0.2.0
 */
export interface Reading {
  readonly qps: number
  readonly at: number
}

/**
 * Options: `goal` ≥ 0 (calls per second), and optionally `updatePeriod` > 0 (ms), `jitter`
 * in [0, 1), `initialRatio`, `minRatio`, `staleFloor`, `staleDecay` in (0, 1] with
 * `initialRatio ≥ minRatio`, `staleAfter` > 0 (ms, default three update periods).
 *
 * @since 0.2.0
 */
export interface Options {
  readonly goal: number
  readonly updatePeriod?: number | undefined
  readonly jitter?: number | undefined
  readonly initialRatio?: number | undefined
  readonly minRatio?: number | undefined
  readonly staleAfter?: number | undefined
  readonly staleFloor?: number | undefined
  readonly staleDecay?: number | undefined
}

/**
 * The defaults.
 *
 * @since 0.2.0
 */
export const defaults = {
  updatePeriod: 5000,
  jitter: 0.1,
  initialRatio: 1,
  minRatio: 0.001,
  staleFloor: 0.1,
  staleDecay: 0.8
} as const

type Resolved = Readonly<Record<keyof Options, number>>

const resolve = (o: Options): Resolved => {
  const updatePeriod = o.updatePeriod ?? defaults.updatePeriod
  return {
    goal: o.goal,
    updatePeriod,
    jitter: o.jitter ?? defaults.jitter,
    initialRatio: o.initialRatio ?? defaults.initialRatio,
    minRatio: o.minRatio ?? defaults.minRatio,
    staleAfter: o.staleAfter ?? 3 * updatePeriod,
    staleFloor: o.staleFloor ?? defaults.staleFloor,
    staleDecay: o.staleDecay ?? defaults.staleDecay
  }
}

/**
 * The problem with a goal, if any: a finite number ≥ 0.
 *
 * @since 0.2.0
 */
export const goalIssues = (goal: number): Array<Field.Issue> =>
  Field.fields([["goal", goal, Field.nonNegative]])

const jitter = Field.expecting((n) => Number.isFinite(n) && n >= 0 && n < 1, "a ratio in [0, 1)")

/**
 * Every problem with `options`, each naming its field (`initialRatio` is compared with
 * `minRatio` after the defaults are applied).
 *
 * @since 0.2.0
 */
export const issues = (options: Options): Array<Field.Issue> => {
  const found = [
    ...goalIssues(options.goal),
    ...Field.fields([
      ["updatePeriod", options.updatePeriod, Field.positiveDuration],
      ["jitter", options.jitter, jitter],
      ["initialRatio", options.initialRatio, Field.positiveRatio],
      ["minRatio", options.minRatio, Field.positiveRatio],
      ["staleAfter", options.staleAfter, Field.positiveDuration],
      ["staleFloor", options.staleFloor, Field.positiveRatio],
      ["staleDecay", options.staleDecay, Field.positiveRatio]
    ])
  ]
  const { initialRatio, minRatio } = resolve(options)
  if (found.length === 0 && initialRatio < minRatio)
    found.push({ path: ["initialRatio"], message: "initialRatio must not be below minRatio" })
  return found
}

/**
 * A sampler's state and its rules. Mutable; owned by one worker.
 *
 * @since 0.2.0
 */
export interface ProportionalSampler {
  /** The share `r` of calls sent. */
  readonly ratio: number
  readonly goal: number
  readonly mode: Mode
  /** The last valid, fresh reading. */
  readonly lastReading: Reading | undefined
  /** When the last good reading was taken, or when the sampler started. */
  readonly lastGoodAt: number
  /** How old a reading may be and still be fed in, in milliseconds. */
  readonly staleAfter: number
  /** The spread of the update delays (0: none, and `nextDelay` draws nothing). */
  readonly jitter: number
  /** Calls sent since the start. */
  readonly sent: number
  /** Calls skipped since the start. */
  readonly skipped: number
  /** The calls sent and skipped since the last `drain` (or the start), for counters updated in batches. */
  readonly drain: () => { readonly sent: number; readonly skipped: number }
  /** Decides for one call: `true` = send it. */
  readonly sample: () => boolean
  /** One controller update at `now` with the sensor's reading (`undefined`: none). */
  readonly step: (now: number, reading: Reading | undefined) => void
  /** Changes the goal (≥ 0; 0 pauses at once). */
  readonly setGoal: (goal: number) => void
  /** The jittered wait before the next update, in ms; `random` is called only when jitter > 0. */
  readonly nextDelay: (random: () => number) => number
}

/** A reading is a measurement only when finite and non-negative: NaN, ±Infinity and negatives are not. */
const isValid = (r: Reading) => Number.isFinite(r.qps) && r.qps >= 0 && Number.isFinite(r.at)

class ProportionalSamplerImpl implements ProportionalSampler {
  ratio: number
  goal: number
  mode: Mode
  lastReading: Reading | undefined = undefined
  lastGoodAt: number
  readonly staleAfter: number
  readonly jitter: number
  sent = 0
  skipped = 0
  private drainedSent = 0
  private drainedSkipped = 0
  private credit: number
  constructor(
    private readonly o: Resolved,
    now: number,
    credit: number
  ) {
    this.goal = o.goal
    this.ratio = o.goal === 0 ? o.minRatio : o.initialRatio
    this.mode = o.goal === 0 ? "paused" : "tracking"
    this.credit = credit
    this.lastGoodAt = now
    this.staleAfter = o.staleAfter
    this.jitter = o.jitter
    this.sample = this.sample.bind(this)
    this.step = this.step.bind(this)
    this.setGoal = this.setGoal.bind(this)
    this.nextDelay = this.nextDelay.bind(this)
    this.drain = this.drain.bind(this)
  }
  sample(): boolean {
    this.credit += this.ratio
    if (this.credit >= 1) {
      this.credit -= 1
      this.sent++
      return true
    }
    this.skipped++
    return false
  }
  drain(): { readonly sent: number; readonly skipped: number } {
    const drained = { sent: this.sent - this.drainedSent, skipped: this.skipped - this.drainedSkipped }
    this.drainedSent = this.sent
    this.drainedSkipped = this.skipped
    return drained
  }
  step(now: number, reading: Reading | undefined): void {
    const o = this.o
    const fresh = reading !== undefined && isValid(reading) && now - reading.at <= this.staleAfter
    if (fresh) {
      this.lastReading = reading
      this.lastGoodAt = Math.max(this.lastGoodAt, reading.at)
    }
    if (this.goal === 0) {
      this.mode = "paused"
      this.ratio = o.minRatio
    } else if (fresh) {
      this.mode = "tracking"
      const m = reading.qps
      const next = m === 0 ? 1 : (this.ratio * this.goal) / m
      this.ratio = Math.min(1, Math.max(o.minRatio, next))
    } else if (now - this.lastGoodAt > this.staleAfter) {
      // Stale: never raise r (no flood gates), and decay only down to the floor, so
      // traffic never stops because a sensor died.
      this.mode = "stale"
      if (this.ratio > o.staleFloor) this.ratio = Math.max(o.staleFloor, this.ratio * o.staleDecay)
    }
    // else: a missing reading inside the grace period; hold r.
  }
  setGoal(goal: number): void {
    Field.orThrow(goalIssues(goal))
    const wasPaused = this.goal === 0
    this.goal = goal
    if (goal === 0) {
      this.mode = "paused"
      this.ratio = this.o.minRatio
    } else if (wasPaused) {
      this.mode = "tracking"
    }
  }
  nextDelay(random: () => number): number {
    const j = this.o.jitter
    if (j === 0) return this.o.updatePeriod
    // a factor uniform in [1 − j, 1 + j), written as (max − min) × u + min
    const delay = this.o.updatePeriod * ((1 + j - (1 - j)) * random() + (1 - j))
    // a draw just below 1 can round up to the open end of the interval: keep it open
    const end = this.o.updatePeriod * (1 + j)
    return delay < end ? delay : end * (1 - Number.EPSILON)
  }
}

/**
 * Makes a sampler started at `now`; `random` is drawn once, for the random start of the
 * systematic sampling. Throws a `RangeError` for options with `issues` (bindings check
 * them first and report every field).
 *
 * @since 0.2.0
 */
export const make = (options: Options, now: number, random: () => number): ProportionalSampler => {
  Field.orThrow(issues(options))
  return new ProportionalSamplerImpl(resolve(options), now, random())
}

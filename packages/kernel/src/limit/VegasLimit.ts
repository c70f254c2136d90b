/**
 * A delay-based concurrency limit in the style of TCP VegasLimit, after Netflix
 * concurrency-limits' `VegasLimit`.
 *
 * It learns the no-load latency (the smallest round-trip time of a success) and estimates
 * how many requests wait in the backend's queue: `queued = limit × (1 − noLoadRtt / rtt)`.
 * With `step = max(1, log10(limit))`: no queueing (`queued ≤ step`) grows the limit by
 * `beta × step`, a small queue (`queued < alpha × step`) by `step`, a long one
 * (`queued > beta × step`) shrinks it by `step`, and in between it holds. So it settles where
 * a little queueing shows up, before errors do. A success that sets a new minimum only moves
 * the baseline, as in Netflix's `VegasLimit`: it is the reference, not a measurement
 * against it. The queue estimate is kept exact (Netflix rounds it up). It decides at most
 * once per round trip (a request sent before the last change measures the old limit), and
 * only a limit that is used (in-flight ≥ limit / 2) grows.
 *
 * Drops come back fast, so their latency is never taken as the no-load latency; instead a
 * drop multiplies the limit by `backoffRatio`, once per burst (as in the congestion window).
 *
 * A queue that never drains would hide the true no-load latency, and a backend may become
 * slower for good: every `probeMultiplier × limit` successes the limit is halved for one
 * round trip and the no-load latency is re-learned from that round (Netflix's probe, made
 * deterministic: no randomness).
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"
import { type Bounds, type Limit, type Sample, boundsIssues, configureBounded } from "./Limit.js"

/**
 * A resolved configuration: the bounds, `alpha < beta` in units of `log10(limit)`,
 * `smoothing` in (0, 1] (1 = take the target at once), `backoffRatio` in (0, 1) on a drop,
 * and `probeMultiplier` (a positive integer).
 *
 * @since 0.2.0
 */
export interface Config extends Bounds {
  readonly alpha: number
  readonly beta: number
  readonly smoothing: number
  readonly backoffRatio: number
  readonly probeMultiplier: number
}

/**
 * Issues of a configuration beyond each field's own range: the bounds, and `alpha` below
 * `beta` (otherwise the band where the limit holds is empty and it oscillates).
 *
 * @since 0.2.0
 */
export const issues = (
  config: Omit<Config, "initial"> & { readonly initial?: number | undefined }
): Array<Field.Issue> => {
  const found = boundsIssues(config)
  if (config.alpha >= config.beta) {
    found.push({ path: ["alpha"], message: `alpha (${config.alpha}) must be below beta (${config.beta})` })
  }
  return found
}

/**
 * Validates VegasLimit's options: the bounds, `alpha` (3) and `beta` (6) positive, `smoothing` in
 * (0, 1] (1), `backoffRatio` in (0, 1) (0.9), `probeMultiplier` a positive integer (30), then
 * {@link issues}.
 *
 * @since 0.2.0
 */
export const configure: (input: object) => Field.Result<Config> = configureBounded(
  {
    alpha: Field.withDefault(Field.positive, 3),
    beta: Field.withDefault(Field.positive, 6),
    smoothing: Field.withDefault(Field.positiveRatio, 1),
    backoffRatio: Field.withDefault(Field.openRatio, 0.9),
    probeMultiplier: Field.withDefault(Field.positiveInt, 30)
  },
  issues
)

/**
 * A VegasLimit limit. `noLoadRtt` is the learned no-load latency in milliseconds; `probing` is
 * true while a probe round runs at half the limit.
 *
 * @since 0.2.0
 */
export class VegasLimit implements Limit {
  readonly name = "vegas"
  limit: number
  noLoadRtt: number | undefined = undefined
  ignoreBelow = 0
  decidedBelow = 0
  probing = false
  private sinceProbe = 0
  private probeFrom = 0
  private probeSeen = 0
  private probeMin = Infinity
  private probeRestore = 0
  constructor(readonly config: Config) {
    this.limit = config.initial
  }
  private clamp(n: number): number {
    return Math.min(this.config.maxLimit, Math.max(this.config.minLimit, n))
  }
  private set(target: number): number {
    const smoothing = this.config.smoothing
    this.limit = this.clamp((1 - smoothing) * this.limit + smoothing * this.clamp(target))
    return this.limit
  }
  onSample(sample: Sample): number {
    if (sample.outcome === "dropped") {
      // A drop comes back fast: its latency says nothing about queueing and must
      // never become the no-load latency. Back off once per burst.
      if (sample.id < this.ignoreBelow) return this.limit
      this.ignoreBelow = sample.nextId
      this.decidedBelow = sample.nextId
      if (this.probing) {
        this.probing = false
        this.limit = this.probeRestore
      }
      return this.set(this.limit * this.config.backoffRatio)
    }
    if (sample.outcome !== "success" || !(sample.rtt > 0)) return this.limit
    const rtt = sample.rtt
    const newMinimum = this.noLoadRtt === undefined || rtt < this.noLoadRtt
    const noLoadRtt = newMinimum ? rtt : this.noLoadRtt!
    this.noLoadRtt = noLoadRtt
    if (this.probing) return this.probe(sample)
    // A queue that never drains would hide the true no-load latency forever (and a
    // backend may become slower for good): every probeMultiplier × limit successes,
    // halve the limit for one round trip and re-learn it from that round.
    if (++this.sinceProbe >= this.config.probeMultiplier * this.limit) {
      this.sinceProbe = 0
      this.probing = true
      this.probeRestore = this.limit
      this.probeFrom = sample.nextId
      this.probeSeen = 0
      this.probeMin = Infinity
      this.limit = this.clamp(this.limit / 2)
      return this.limit
    }
    // A new minimum is a new baseline, not a measurement against the old one: like
    // Netflix's VegasLimit, take it and leave the limit for the next sample to judge.
    if (newMinimum) return this.limit
    // An unused limit says nothing about capacity.
    if (sample.inFlight * 2 < this.limit) return this.limit
    // One decision per round trip: requests sent before the last change measure the old limit.
    if (sample.id < this.decidedBelow) return this.limit
    const step = Math.max(1, Math.log10(this.limit))
    const queued = this.limit * (1 - noLoadRtt / rtt)
    const { alpha, beta } = this.config
    let target: number
    if (queued <= step) target = this.limit + beta * step
    else if (queued < alpha * step) target = this.limit + step
    else if (queued > beta * step) target = this.limit - step
    else return this.limit
    this.decidedBelow = sample.nextId
    return this.set(target)
  }
  private probe(sample: Sample): number {
    if (sample.id < this.probeFrom) return this.limit
    this.probeMin = Math.min(this.probeMin, sample.rtt)
    if (++this.probeSeen >= Math.max(1, Math.floor(this.limit))) {
      this.noLoadRtt = this.probeMin
      this.probing = false
      this.limit = this.probeRestore
      this.decidedBelow = sample.nextId
    }
    return this.limit
  }
}

/**
 * When the quota store's failures are sustained enough to feed its circuit breaker. The breaker
 * itself opens on the first failure it is fed; this rule feeds it only once failure lasts, and
 * from then on (while the breaker is open or half-open: `suspect`) every call goes through it,
 * so one stall never opens it and a failed probe re-opens it at once.
 *
 * Both trips ask for failure that lasts: one stall fails every call in flight at once (with 32
 * in flight, 32 failures in a row, 100% of the calls since), so a run of `consecutiveFailures`,
 * or an episode of failures of at least `failureRatio` with at least `minimumCalls` (an episode
 * starts at a failure with none before it in the window and counts every call since), must span
 * `minFailureSpanMs` before either trips. Failures are counted over `windowMs`; calls only while
 * failures are in it, so a successful call outside an episode costs one comparison.
 *
 * @since 0.2.0
 */
import type { Breaker } from "./QuotaOptions.js"
import * as Ratio from "../stats/Ratio.js"
import { RollingCounter } from "../stats/RollingCounter.js"

/**
 * The rule's state for one store. Time is the caller's `now` (milliseconds).
 *
 * @since 0.2.0
 */
export class SustainedFailure {
  /** the breaker has something to learn: every call goes through it until it closes again */
  suspect = false
  private readonly failures: RollingCounter
  private readonly ratio: Ratio.ExactRatio
  private consecutive = 0
  private firstFailureAt = 0
  private episodeStart = 0
  private episodeCalls = 0
  private inEpisode = false

  constructor(readonly options: Omit<Breaker, "openForMs" | "halfOpenProbes">) {
    this.failures = new RollingCounter({ windowMillis: options.windowMs, buckets: 10 })
    this.ratio = Ratio.make(options.failureRatio)
  }

  /** A store call answered: the run of failures ends. */
  success(): void {
    if (this.inEpisode) this.episodeCalls++
    this.consecutive = 0
  }

  /** A store call failed at `now`: true when failure is now sustained (feed the breaker; `suspect`). */
  failure(now: number): boolean {
    const o = this.options
    if (!this.inEpisode || this.failures.total(now) === 0) {
      this.inEpisode = true
      this.episodeStart = now
      this.episodeCalls = 0
      this.failures.reset()
    }
    this.episodeCalls++
    this.failures.add(now)
    if (this.consecutive++ === 0) this.firstFailureAt = now
    const sustained =
      (this.consecutive >= o.consecutiveFailures && now - this.firstFailureAt >= o.minFailureSpanMs) ||
      (now - this.episodeStart >= o.minFailureSpanMs &&
        this.episodeCalls >= o.minimumCalls &&
        this.ratio.atLeast(this.failures.total(now), this.episodeCalls))
    if (sustained) this.suspect = true
    return sustained
  }

  /** The breaker closed again: forget the episode. */
  closed(): void {
    this.suspect = false
    this.consecutive = 0
    this.inEpisode = false
    this.failures.reset()
  }
}

/**
 * The congestion window: TCP's answer to "how much may I send?" (RFC 5681, Tahoe and Reno),
 * applied to requests instead of bytes.
 *
 * State: `cwnd`, `ssthresh` and the set of requests whose errors are ignored. On a success
 * `cwnd` grows by 1 below `ssthresh` (slow start) and by `1 / cwnd` above it (congestion
 * avoidance), but never beyond in-flight + 1, so idle capacity does not inflate it. On a
 * drop from a request outside the ignored set, `ssthresh = cwnd × backoffRatio` and `cwnd`
 * becomes the initial value (Tahoe) or the new `ssthresh` (Reno); the ignored set becomes
 * every request in flight at that moment, so one burst of errors counts once — as TCP
 * halves once per window, not once per lost segment.
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"
import { type Bounds, type Limit, type Sample, configureBounded } from "./Limit.js"

/**
 * A resolved configuration: the bounds, the first `ssthresh`, the `backoffRatio` in (0, 1)
 * applied on a drop (0.5 classic; 0.9 for a stable capacity) and the variant.
 *
 * @since 0.2.0
 */
export interface Config extends Bounds {
  readonly ssthresh: number
  readonly backoffRatio: number
  readonly variant: "tahoe" | "reno"
}

/**
 * Validates the window's options: the bounds, `ssthresh` a positive number (1024),
 * `backoffRatio` in (0, 1) (0.5) and `variant` (`"reno"`).
 *
 * @since 0.2.0
 */
export const configure: (input: object) => Field.Result<Config> = configureBounded({
  ssthresh: Field.withDefault(Field.positive, 1024),
  backoffRatio: Field.withDefault(Field.openRatio, 0.5),
  variant: Field.withDefault<Config["variant"]>(Field.oneOf("tahoe", "reno"), "reno")
})

/**
 * A congestion window. `limit` is `cwnd`; `ignoreBelow` is the ignored set as a permit id:
 * drops from permits with a smaller id belong to an already counted burst.
 *
 * @since 0.2.0
 */
export class CongestionWindow implements Limit {
  readonly name: string
  /** The window counts requests, never time: its samples need no clock read. */
  readonly usesTime = false
  cwnd: number
  ssthresh: number
  ignoreBelow = 0
  constructor(readonly config: Config) {
    this.name = `congestion-window(${config.variant})`
    this.cwnd = config.initial
    this.ssthresh = config.ssthresh
  }
  get limit(): number {
    return this.cwnd
  }
  onSample(sample: Sample): number {
    if (sample.outcome === "success") {
      const cwnd = this.cwnd
      // Idle capacity must not inflate the window: growth stops at in-flight + 1.
      const grown = Math.min(
        cwnd + (cwnd < this.ssthresh ? 1 : 1 / cwnd),
        sample.inFlight + 1,
        this.config.maxLimit
      )
      if (grown > cwnd) this.cwnd = grown
    } else if (sample.outcome === "dropped" && sample.id >= this.ignoreBelow) {
      const { backoffRatio, initial, maxLimit, minLimit, variant } = this.config
      this.ssthresh = Math.max(minLimit, this.cwnd * backoffRatio)
      this.cwnd = Math.min(maxLimit, Math.max(minLimit, variant === "tahoe" ? initial : this.ssthresh))
      // Everything in flight now belongs to the same burst: its errors count once.
      this.ignoreBelow = sample.nextId
    }
    return this.cwnd
  }
}

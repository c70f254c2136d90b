/**
 * Additive-increase / multiplicative-decrease concurrency limit, after Netflix
 * concurrency-limits' `AIMDLimit`.
 *
 * On a drop the limit becomes `floor(limit × backoffRatio)`; on a success it grows by 1, but
 * only while the limit is actually used (in-flight ≥ limit / 2): a limit that is never
 * reached says nothing about capacity and must not drift upwards. The limit stays within
 * `[minLimit, maxLimit]`. A success slower than `timeout` counts as a drop, as in Netflix's
 * `rtt > timeout`.
 *
 * @since 0.2.0
 */
import * as Ratio from "../stats/Ratio.js"
import * as Field from "../options/Field.js"
import { type Bounds, type Limit, type Sample, configureBounded } from "./Limit.js"

/**
 * A resolved configuration: the bounds (integers), `backoffRatio` in (0, 1) and `timeout`
 * in milliseconds (`Infinity`: no timeout).
 *
 * @since 0.2.0
 */
export interface Config extends Bounds {
  readonly backoffRatio: number
  readonly timeout: number
}

/**
 * Validates AIMD's options: the bounds and `backoffRatio` in (0, 1) (0.9). The `timeout` is
 * the binding's to read (a duration in its own terms), given here in milliseconds.
 *
 * @since 0.2.0
 */
export const configure: (input: object) => Field.Result<Omit<Config, "timeout">> = configureBounded({
  backoffRatio: Field.withDefault(Field.openRatio, 0.9)
})

/**
 * An AIMD limit.
 *
 * @since 0.2.0
 */
export class AimdLimit implements Limit {
  readonly name = "aimd"
  limit: number
  private readonly backoff: Ratio.ExactRatio
  constructor(readonly config: Config) {
    this.limit = config.initial
    this.backoff = Ratio.make(config.backoffRatio)
  }
  onSample(sample: Sample): number {
    const { maxLimit, minLimit } = this.config
    if (sample.outcome === "dropped" || (sample.outcome === "success" && sample.rtt > this.config.timeout)) {
      // Exact: 30 × 0.9 is 27 (26.999999999999996 in floating point).
      this.limit = Math.max(minLimit, this.backoff.floorTimes(this.limit))
    } else if (sample.outcome === "success" && sample.inFlight * 2 >= this.limit) {
      // Only a limit that is actually used may grow.
      this.limit = Math.min(maxLimit, this.limit + 1)
    }
    return this.limit
  }
}

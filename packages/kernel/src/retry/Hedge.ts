/**
 * A hedging policy's rules: when a slow call gets one more copy, and when it must not. After a
 * delay (fixed, or a quantile of the key's recent latencies) a call still running gets another
 * attempt, up to `maxHedges` of them; the first success wins and the others are cancelled.
 *
 * A hedge is extra load. It is sent only while the call is merely slow: never once any attempt
 * of the call failed (a failure is the backend's answer, and answers are for the retry policy
 * and its backoff), never while the caller's owner pauses hedging (the backend signalled
 * throttle, the client's throttle is rejecting), and never without a withdrawal from the same
 * retry budget retries spend. A cold key hedges nothing: whether the delay is fixed or learned,
 * no hedge is sent until `minSamples` calls of the key have succeeded within the `window`. A
 * client that starts (or comes back) during an incident has not seen the backend healthy, and
 * its first requests, all slow, would otherwise each get a copy before the first failure or
 * throttle signal arrives to pause hedging; a learned delay also needs those latencies.
 *
 * @since 1.1.0
 */
import * as Field from "../options/Field.js"
import { LatencyWindow } from "../stats/LatencyWindow.js"

/**
 * The options of a hedging policy: at most `maxHedges` extra attempts per call (default 1), after
 * a fixed `delay`, or else after the `quantile` (default 0.95) of the latencies of the last
 * `window` (default 30 s); either only once the window holds `minSamples` (default 20)
 * successful calls. `minSamples: 0` lets a fixed delay hedge from the first call.
 *
 * @since 1.1.0
 */
export const options = {
  maxHedges: Field.withDefault(Field.positiveInt, 1),
  delay: Field.duration(Field.optional<number>(Field.finiteDuration)),
  quantile: Field.withDefault(Field.openRatio, 0.95),
  minSamples: Field.withDefault(Field.nonNegativeInt, 20),
  window: Field.duration(Field.withDefault(Field.positiveDuration, 30_000))
}

/**
 * A policy's settings in milliseconds, validated by the caller ({@link options}).
 *
 * @since 1.1.0
 */
export interface HedgeOptions {
  readonly maxHedges: number
  readonly delayMillis: number | undefined
  readonly quantile: number
  readonly minSamples: number
  readonly windowMillis: number
}

/**
 * Why a hedge is not sent now: the call already failed once (`"failed"`), its owner pauses hedging
 * (`"paused"`), the retry budget is spent (`"budget"`), all `maxHedges` were sent (`"max"`), or a
 * gate (throttle, limiter) refused it or would have made it wait (`"gate"`, decided by the owner
 * after {@link verdict}: a hedge never queues).
 *
 * @since 1.1.0
 */
export type Refusal = "failed" | "paused" | "budget" | "max" | "gate"

/**
 * Whether the next hedge of a call goes out: `"hedge"` or why not. `withdraw` is asked last (it
 * spends budget) and only when nothing else refused.
 *
 * @since 1.1.0
 */
export const verdict = (
  state: { readonly sent: number; readonly failed: boolean; readonly paused: boolean },
  config: Pick<HedgeOptions, "maxHedges">,
  withdraw: () => boolean
): "hedge" | Refusal => {
  if (state.sent >= config.maxHedges) return "max"
  if (state.failed) return "failed"
  if (state.paused) return "paused"
  return withdraw() ? "hedge" : "budget"
}

/**
 * The hedge delay of one key: `undefined` (no hedge) until the key's window holds `minSamples`
 * successful calls, then the fixed delay, or the configured quantile of the latencies the window
 * holds. Mutable: the owner passes the time (`now`, epoch milliseconds).
 *
 * A call a hedge won is recorded with the time it took: for a primary cancelled as the loser, a
 * lower bound of its latency, which keeps the quantile from forgetting the slow calls hedging hid.
 *
 * @since 1.1.0
 */
export class Delay {
  private readonly window: LatencyWindow | undefined
  constructor(private readonly config: HedgeOptions) {
    // A fixed delay without a warm-up needs no history.
    this.window =
      config.delayMillis === undefined || config.minSamples > 0
        ? new LatencyWindow({ windowMillis: config.windowMillis })
        : undefined
  }

  /** The delay before the first hedge of a call starting at `now`; `undefined`: no hedge yet. */
  millis(now: number): number | undefined {
    const window = this.window
    if (window === undefined) return this.config.delayMillis
    const count = window.count(now)
    if (count < this.config.minSamples) return undefined
    if (this.config.delayMillis !== undefined) return this.config.delayMillis
    return count === 0 ? undefined : window.quantile(now, this.config.quantile)
  }

  /** Records the latency of a successful call. */
  record(now: number, millis: number): void {
    this.window?.record(now, millis)
  }
}

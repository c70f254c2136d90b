/**
 * A hedging policy's rules: when a slow call gets one more copy, and when it must not. After a
 * delay (fixed, or a quantile of the key's recent latencies) a call still running gets another
 * attempt, up to `maxHedges` of them; the first success wins and the others are cancelled.
 *
 * A hedge is extra load. It is sent only while the call is merely slow: never once any attempt
 * of the call failed (a failure is the backend's answer, and answers are for the retry policy
 * and its backoff), never while the caller's owner pauses hedging (the backend signalled
 * throttle, the client's throttle is rejecting), and never without a withdrawal from the same
 * retry budget retries spend. A learned delay needs `minSamples` latencies in the window first:
 * until then no hedge is sent, so a cold client cannot hedge everything.
 *
 * @since 1.1.0
 */
import * as Field from "../options/Field.js"
import { LatencyWindow } from "../stats/LatencyWindow.js"

/**
 * The options of a hedging policy: at most `maxHedges` extra attempts per call (default 1), after
 * a fixed `delay`, or else after the `quantile` (default 0.95) of the latencies of the last
 * `window` (default 30 s) once it holds `minSamples` (default 20).
 *
 * @since 1.1.0
 */
export const options = {
  maxHedges: Field.withDefault(Field.positiveInt, 1),
  delay: Field.duration(Field.optional<number>(Field.finiteDuration)),
  quantile: Field.withDefault(Field.openRatio, 0.95),
  minSamples: Field.withDefault(Field.positiveInt, 20),
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
 * (`"paused"`), the retry budget is spent (`"budget"`), or all `maxHedges` were sent (`"max"`).
 *
 * @since 1.1.0
 */
export type Refusal = "failed" | "paused" | "budget" | "max"

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
 * The hedge delay of one key: the fixed delay, or the configured quantile of the latencies the
 * key recorded in its window. Mutable: the owner passes the time (`now`, epoch milliseconds).
 *
 * A cancelled attempt is recorded with the time it had run when it was cancelled: a lower bound
 * of its latency, which keeps the quantile from forgetting the slow calls hedging hid.
 *
 * @since 1.1.0
 */
export class Delay {
  private readonly window: LatencyWindow | undefined
  constructor(private readonly config: HedgeOptions) {
    this.window =
      config.delayMillis === undefined ? new LatencyWindow({ windowMillis: config.windowMillis }) : undefined
  }

  /** The delay before the first hedge of a call starting at `now`; `undefined`: no hedge yet. */
  millis(now: number): number | undefined {
    const window = this.window
    if (window === undefined) return this.config.delayMillis
    if (window.count(now) < this.config.minSamples) return undefined
    return window.quantile(now, this.config.quantile)
  }

  /** Records the latency of a call's first attempt (only a learned delay keeps it). */
  record(now: number, millis: number): void {
    this.window?.record(now, millis)
  }
}

/**
 * Client strategies for the simulation, each assembled only from the public APIs of
 * @sluice/retry and @sluice/adaptive: the same values a service would deploy.
 */
import {
  AimdLimit,
  ConcurrencyLimiter,
  CongestionWindow,
  Pacer,
  TempoLimit,
  VegasLimit
} from "@sluice/adaptive"
import type { Options } from "@sluice/core"
import { Backoff, Hedge, Retry, RetryBudget } from "@sluice/retry"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type * as Simulation from "../Simulation.js"
import type { PacerPlacement, Strategy } from "../Strategy.js"

/** A retry policy needs a finite attempt cap; this one is never reached in practice. */
const UNLIMITED_ATTEMPTS = Number.MAX_SAFE_INTEGER

/** The retry immediately, no delay: pacing comes from the concurrency limiter. */
const immediately = Schedule.forever

const exponentialBackoff = () =>
  Backoff.exponential({ base: "50 millis", factor: 2, max: "30 seconds" }).pipe(Backoff.jitter("full"))

/**
 * Retries (immediately) around a concurrency limiter built from a limit algorithm.
 * With `pacing`, every attempt also waits for its paced departure
 * (`Pacer.forLimiter`): the window is spread over one round trip instead of leaving
 * as a burst. The pacer sits inside the retry (each attempt is paced) and, by
 * default, inside the limiter (a paced attempt already counts as in flight, so the
 * pacer never queues more than the window); `"outside"` paces before the permit.
 */
/** @internal */
export const limited =
  (
    algorithm: () => ConcurrencyLimiter.LimiterOptions["algorithm"],
    pacing?: Pacer.PacerTuning,
    placement: PacerPlacement = "inside"
  ) =>
  (index: number): Effect.Effect<Simulation.Client, Options.InvalidOptions, Scope.Scope> =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({
        key: `client-${index}`,
        algorithm: algorithm(),
        maxQueue: 1_000_000
      })
      const retry = Retry.makeUnsafe({ maxAttempts: UNLIMITED_ATTEMPTS, schedule: immediately }).apply
      const gauges = { cwnd: () => limiter.limit, queued: () => limiter.queued }
      if (pacing === undefined) {
        return { run: (attempt) => retry(limiter.withLimiter(attempt)), gauges }
      }
      const pacer = yield* Pacer.forLimiter(limiter, pacing)
      return {
        run:
          placement === "inside"
            ? (attempt) => retry(limiter.withLimiter(pacer.withPacer(attempt)))
            : (attempt) => retry(pacer.withPacer(limiter.withLimiter(attempt))),
        gauges: { ...gauges, paced: () => pacer.queued }
      }
    })

/**
 * The pacer's defaults: one window per smoothed round trip (gain 1), 1.25 while the
 * window is still in slow start, RFC 6298 smoothing of the round trip.
 */
const pacing: Pacer.PacerTuning = {}

/** @internal */
export const naive: Strategy = {
  name: "naive",
  description: "retry immediately, up to 10 attempts",
  make: () =>
    Effect.sync(() => {
      const retry = Retry.makeUnsafe({ maxAttempts: 10, schedule: immediately }).apply
      return { run: (attempt) => retry(attempt) }
    })
}

/** @internal */
export const exponential: Strategy = {
  name: "exponential",
  description: "exponential backoff from 50 ms, x2, max 30 s, full jitter, until success",
  make: () =>
    Effect.sync(() => {
      const retry = Retry.makeUnsafe({
        maxAttempts: UNLIMITED_ATTEMPTS,
        schedule: exponentialBackoff()
      }).apply
      return { run: (attempt) => retry(attempt) }
    })
}

/** @internal */
export const exponentialBudget: Strategy = {
  name: "exponential-budget",
  description: "the same backoff, at most 3 attempts, retries within a 10% retry budget",
  make: (index) =>
    Effect.map(RetryBudget.make({ ratio: 0.1 }), (budgets) => {
      const retry = Retry.makeUnsafe({
        maxAttempts: 3,
        schedule: exponentialBackoff(),
        budget: budgets.forKey(`client-${index}`)
      }).apply
      return { run: (attempt) => retry(attempt) }
    })
}

/** @internal */
export const hedgeBudget: Strategy = {
  name: "hedge-budget",
  description:
    "exponential-budget, and a hedge after the p95 of recent latencies, from the same 10% retry budget",
  make: (index) =>
    Effect.map(RetryBudget.make({ ratio: 0.1 }), (budgets) => {
      const policy = Retry.makeUnsafe({
        maxAttempts: 3,
        schedule: exponentialBackoff(),
        budget: budgets.forKey(`client-${index}`)
      })
      const hedge = Hedge.makeUnsafe({ policy, quantile: 0.95, maxHedges: 1 }).apply
      return { run: (attempt) => hedge(attempt) }
    })
}

/** @internal */
export const cwndTahoe: Strategy = {
  name: "cwnd-tahoe",
  description: "congestion window (Tahoe: back to 20 on overload, factor 0.5), paced, immediate retries",
  make: limited(() => CongestionWindow.factory({ variant: "tahoe", backoffRatio: 0.5 }), pacing)
}

/** @internal */
export const cwndReno: Strategy = {
  name: "cwnd-reno",
  description: "congestion window (Reno, factor 0.9), paced, immediate retries",
  make: limited(() => CongestionWindow.factory({ variant: "reno", backoffRatio: 0.9 }), pacing)
}

/** @internal */
export const tempo: Strategy = {
  name: "tempo",
  description:
    "rate-paced limit (TempoLimit: paced start-up, exit at the first overload to what the request saw, burst probes), pacer outside the limiter, immediate retries",
  make: limited(() => TempoLimit.factory(), { maxQueue: 1_000_000 }, "outside")
}

/** @internal */
export const aimd: Strategy = {
  name: "aimd",
  // Not paced: AIMD grows by 1 per success and needs the bursts to find the capacity
  // (paced it took 1.47 × optimal on overload-2000, unpaced 1.22 ×).
  description: "AIMD concurrency limit (x0.9 on overload, +1 per success while used), immediate retries",
  make: limited(() => AimdLimit.factory())
}

/** @internal */
export const vegas: Strategy = {
  name: "vegas",
  description:
    "delay-based limit (VegasLimit: grows while latency stays at its no-load value, x0.9 on overload), paced, immediate retries",
  make: limited(() => VegasLimit.factory(), pacing)
}

/** @internal */
export const builtIns: ReadonlyArray<Strategy> = [
  naive,
  exponential,
  exponentialBudget,
  cwndTahoe,
  cwndReno,
  tempo,
  aimd,
  vegas,
  hedgeBudget
]

/** @internal */
export const isStrategy = (u: unknown): u is Strategy =>
  typeof u === "object" &&
  u !== null &&
  typeof (u as Strategy).name === "string" &&
  typeof (u as Strategy).make === "function"

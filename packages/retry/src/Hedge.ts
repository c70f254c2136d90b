/**
 * Hedged requests inside the retry budget: when a call is slow, send another copy of it.
 *
 * A hedging policy wraps a retry policy (`Retry.make`) and goes where it goes:
 * `hedge.apply(self)` or `hedge.around(gates)(self)`. The call runs through the retry policy as
 * usual (the primary). While it runs, after `delay` (fixed, or the `quantile` of the latencies
 * this policy, or this `around`, has seen lately) another attempt of `self` starts, up to
 * `maxHedges`, each `delay` after the previous one; the first success wins and every other
 * attempt is interrupted. The primary's failure (after its own retries) ends the call.
 *
 * A hedge is sent only:
 * - while no attempt of the call has failed (a failure is the backend's answer: retries handle it,
 *   with their backoff, so hedging never multiplies failures);
 * - while the `paused` check given to `around` says no (the HTTP client pauses hedging for a
 *   backend that signals throttle, failed an attempt lately, or that its adaptive throttle rejects);
 * - after a withdrawal from the retry policy's budget, the same one its retries spend;
 * - through the same gates (throttle, limiter) as every try, without waiting: a gate that would
 *   queue it refuses it (`reason: "gate"`, its withdrawal given back). A queued hedge is late, and
 *   under a newest-first limiter it would take a permit ahead of other calls' first tries.
 *
 * **Details**
 *
 * - Hedge `k` (1 for the first) runs with `Retry.currentAttempt` set to `k`, so the HTTP client
 *   sends it as `x-sluice-attempt: k` and a server's retry histogram counts it.
 * - Losers are interrupted as a caller interrupts work: their gate tickets settle `"ignored"`, so
 *   a cancelled attempt teaches no limit and no throttle. They are awaited: when the call
 *   returns, their permits are back.
 * - Metrics, all with `policy` when the policy has a `name`: `sluice_hedge_sent`,
 *   `sluice_hedge_won` (calls a hedge won), `sluice_hedge_cancelled` (attempts cancelled as
 *   losers, the primary included), `sluice_hedge_refused` (`reason`: `failed`, `paused`,
 *   `budget`, `max`, `gate`). `sent` counts hedges the gates admitted. Every hedge runs in a span `sluice.hedge.attempt` (attributes
 *   `sluice.hedge.attempt`, `sluice.hedge.delay_ms`).
 *
 * **Gotchas**
 *
 * - Hedge only idempotent calls: two copies of the call may both reach the backend.
 * - A cold policy sends no hedge, with a fixed delay too: first `minSamples` calls (per `around`,
 *   or per policy for `apply`) must succeed within `window`. A client started during an incident
 *   would otherwise copy its first slow requests before any failure or throttle signal arrives.
 * - Hedging is for the tail of a healthy backend. Under overload the budget is spent by retries,
 *   failures stop hedges call by call, and the client's pause stops them per backend.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { Hedge, Retry, RetryBudget } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * declare const read: Effect.Effect<string>
 *
 * const program = Effect.gen(function* () {
 *   const budget = yield* RetryBudget.forKey("catalog")
 *   const retry = yield* Retry.make({ maxAttempts: 3, budget })
 *   const hedge = yield* Hedge.make({ policy: retry, delay: "50 millis", maxHedges: 1 })
 *   return yield* hedge.apply(read)
 * })
 * ```
 *
 * @since 1.1.0
 */
import type { Admission, Options } from "@sluice/core"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Metric from "effect/Metric"
import * as internal from "./internal/hedge.js"
import type * as Retry from "./Retry.js"

/**
 * Options of {@link make}.
 *
 * - `policy`: the retry policy the call runs through; its budget is the hedges' budget.
 * - `maxHedges`: extra attempts per call at most (positive integer, default 1).
 * - `delay`: a fixed delay before each hedge; without it the delay is learned.
 * - `quantile`: the quantile of recent latencies a learned delay is (in (0, 1), default 0.95).
 * - `minSamples`: successful calls needed within `window` before any hedge, fixed delay or learned
 *   (non-negative integer, default 20; `0` lets a fixed delay hedge from the first call).
 * - `window`: how far back the warm-up and a learned delay look (default 30 seconds).
 * - `name`: tags metrics (`policy`) and spans.
 *
 * @since 1.1.0
 * @category models
 */
export interface HedgeOptions {
  readonly policy: Retry.Policy
  readonly maxHedges?: number | undefined
  readonly delay?: Duration.Input | undefined
  readonly quantile?: number | undefined
  readonly minSamples?: number | undefined
  readonly window?: Duration.Input | undefined
  readonly name?: string | undefined
}

/**
 * A hedging policy built once. `apply(self)` hedges `self` around the retry policy's `apply`;
 * `around(gates, paused)` hedges where `policy.around(gates)` retries: every hedge passes the
 * same gates, and none is sent while `paused(now)` (the Clock's epoch milliseconds) answers true. A learned delay is learned per
 * `around` (the HTTP client builds one per host) and per policy for `apply`.
 *
 * @since 1.1.0
 * @category models
 */
export interface Policy {
  readonly maxHedges: number
  readonly policy: Retry.Policy
  readonly apply: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, Retry.PolicyError<E>, R>
  readonly around: <const Gates extends ReadonlyArray<Admission.Gate<any, any>>>(
    gates: Gates,
    paused?: (now: number) => boolean
  ) => <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, Retry.PolicyError<E | Admission.RefusalOf<Gates[number]>>, R>
}

/**
 * Builds a {@link Policy}, failing with `InvalidOptions` naming the field on bad options.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Hedge, Retry } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * const hedge = Effect.flatMap(Retry.make({ maxAttempts: 2 }), (policy) =>
 *   Hedge.make({ policy, quantile: 0.9, maxHedges: 1 })
 * )
 * ```
 * @since 1.1.0
 * @category constructors
 */
export const make: (options: HedgeOptions) => Effect.Effect<Policy, Options.InvalidOptions> = internal.make

/**
 * Builds a {@link Policy} synchronously; **throws** `InvalidOptions` naming the field on bad
 * options.
 *
 * @since 1.1.0
 * @category constructors
 */
export const makeUnsafe: (options: HedgeOptions) => Policy = internal.makeUnsafe

/**
 * The hedging metrics (see the module's Details).
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads a metric, shown for its attribute names
 * import { Hedge } from "@sluice/retry"
 * import { Metric } from "effect"
 *
 * const won = Metric.value(Metric.withAttributes(Hedge.metrics.won, { policy: "catalog" }))
 * ```
 * @since 1.1.0
 * @category metrics
 */
export const metrics: {
  readonly sent: Metric.Counter<number>
  readonly won: Metric.Counter<number>
  readonly cancelled: Metric.Counter<number>
  readonly refused: Metric.Counter<number>
} = {
  sent: internal.sent.metric,
  won: internal.won.metric,
  cancelled: internal.cancelled.metric,
  refused: internal.refused.metric
}

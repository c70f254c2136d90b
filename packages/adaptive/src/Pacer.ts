/**
 * The pacer: spreads a window of requests over one round trip instead of
 * sending it as a burst.
 *
 * A concurrency limiter (a congestion window) says *how many* requests may be
 * in flight; on its own it sends them as fast as permits free up, so a
 * window of 50 reaches the backend within a few milliseconds, finds it full,
 * and the excess is rejected while the backend idles later in the round
 * trip. TCP answers this with pacing, and so does this module: departures
 * leave at most every `srtt / (gain × limit)`, where `limit` is read from a
 * function (usually `() => limiter.limit`) and `srtt` is the smoothed
 * round-trip time of the paced effect's successes, measured with the
 * `Clock` (RFC 6298 smoothing; failures do not count, as a fast rejection
 * would make the pacer send faster into an overloaded backend).
 *
 * Departures are reserved in arrival order: a caller whose slot is in the
 * future sleeps until then (a bounded queue, `maxQueue`; a full queue fails
 * with `Overloaded`). A pacer that has been idle does not bank credit: the
 * next departure leaves at once. Interrupting a waiter frees its place; the
 * last reservation also gives its slot back. Before the first success (and
 * without `initialRtt`) there is nothing to pace with and departures leave
 * at once.
 *
 * The gain follows Linux TCP: while `slowStart()` says the window is still
 * doubling, departures go out faster (`slowStartGain`, default 1.25) so the
 * pacer does not hold back the growth; otherwise `gain` (default 1) spreads
 * exactly one window per round trip.
 *
 * Put the pacer *inside* the retry policy (every attempt is paced) and
 * *inside* the limiter (a paced request already holds its permit, so the
 * window counts it and the pacer's queue never exceeds the window):
 * `retry(limiter.withLimiter(pacer.withPacer(call)))`.
 *
 * **Pacing driven by the algorithm.** Given an `algorithm` that declares
 * `pacingInterval` (see `LimitAlgorithm`), the pacer follows it instead:
 * departures wait in one FIFO, and a timer fiber releases the head every
 * `pacingInterval` millis, so a change of rate applies to the whole backlog at
 * once. At each release it also runs the algorithm's timer (`nextTimer` /
 * `onTimer`) and asks it for a burst or a pause (`takeBurst`). Put such a pacer
 * *outside* the limiter (`pacer.withPacer(limiter.withLimiter(call))`): the grant of the permit
 * is then the departure the algorithm's `onDeparture` sees. `forLimiter` does this
 * wiring when the limiter's algorithm declares `pacingInterval`.
 *
 * Metrics (attribute `key`): `sluice_pacer_delay_ms` (histogram of the wait of
 * every departure), `sluice_pacer_queued`, `sluice_pacer_interval_ms`,
 * `sluice_pacer_srtt_ms` (gauges) and `sluice_pacer_rejected` (counter);
 * span `sluice.pacer.wait` around each wait (none when a departure leaves at once). The
 * metrics are updated in the context the pacer was made in (the default registry for
 * `makeUnsafe`).
 *
 * The arithmetic (slots, smoothing, bursts, the algorithm's schedule) is the kernel's
 * `@sluice/kernel/limit/Pacer`; this module sleeps with the Clock, holds the waiters and
 * reports the metrics.
 *
 * @since 0.1.0
 */
import type { Errors, Options } from "@sluice/core"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type { Pipeable } from "effect/Pipeable"
import type * as ConcurrencyLimiter from "./ConcurrencyLimiter.js"
import * as internal from "./internal/pacer.js"
import type * as LimitAlgorithm from "./limit/LimitAlgorithm.js"

/**
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: unique symbol = internal.TypeId

/**
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * The numeric options of a pacer: `gain` in congestion avoidance (default 1:
 * one window per smoothed round trip), `slowStartGain` (default 1.25),
 * `smoothing` of the round-trip estimate (the RFC 6298 α, in (0, 1], default
 * 1/8), `initialRtt` (paces before the first measured success; default: do
 * not pace until then), `maxQueue` (waiters, default 1000; 0 = never wait)
 * and `key` (the metric attribute).
 *
 * @since 0.1.0
 * @category models
 */
export interface PacerTuning {
  readonly gain?: number | undefined
  readonly slowStartGain?: number | undefined
  readonly smoothing?: number | undefined
  readonly initialRtt?: Duration.Input | undefined
  readonly maxQueue?: number | undefined
  readonly key?: string | undefined
}

/**
 * Every option of {@link make}: the tuning plus `limit`, the window to spread
 * over a round trip (read at each departure), optionally `slowStart`,
 * which says when `slowStartGain` applies, and `algorithm`: a limit algorithm
 * that declares `pacingInterval` drives the pacing itself.
 *
 * @since 0.1.0
 * @category models
 */
export interface PacerOptions extends PacerTuning {
  readonly limit: () => number
  readonly slowStart?: (() => boolean) | undefined
  readonly algorithm?: LimitAlgorithm.LimitAlgorithm | undefined
}

/**
 * The options with every default filled in (`initialRtt` decoded to a `Duration`).
 *
 * @since 0.2.0
 * @category models
 */
export interface PacerConfig {
  readonly limit: () => number
  readonly slowStart?: (() => boolean) | undefined
  readonly algorithm?: LimitAlgorithm.LimitAlgorithm | undefined
  readonly gain: number
  readonly slowStartGain: number
  readonly smoothing: number
  readonly initialRtt?: Duration.Duration | undefined
  readonly maxQueue: number
  readonly key: string
}

/**
 * A pacer. `srtt` is `undefined` until the first success; `interval` is the
 * current spacing in millis; `nextDeparture` the earliest time (Clock millis)
 * the next departure may leave.
 *
 * @since 0.1.0
 * @category models
 */
export interface Pacer extends Pipeable {
  readonly [TypeId]: TypeId
  readonly key: string
  readonly options: PacerConfig
  readonly srtt: number | undefined
  readonly interval: number
  readonly gain: number
  readonly queued: number
  readonly nextDeparture: number
  /**
   * Waits for the next paced departure, then runs the effect and measures its round trip.
   *
   * @since 0.2.0
   */
  withPacer<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Errors.Overloaded, R>
  /** Feeds a round-trip sample (millis) measured elsewhere. */
  observeUnsafe(rttMillis: number): void
  /**
   * A burst or a pause at the same average rate. `k > 0`: the next `k` departures
   * leave at once and the rest of the schedule moves back by `k` intervals; `k < 0`:
   * the schedule moves back by `-k` intervals. `now` is the Clock millis.
   *
   * @since 0.2.0
   */
  releaseUnsafe(k: number, now: number): void
}

/**
 * Makes a pacer, failing with `InvalidOptions` (naming the field) on bad options.
 *
 * @example
 * ```ts
 * import { ConcurrencyLimiter, Pacer } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const limiter = yield* ConcurrencyLimiter.make({ key: "backend" })
 *   const pacer = yield* Pacer.make({ key: "backend", limit: () => limiter.limit })
 *   const call = Effect.succeed("ok")
 *   return yield* limiter.withLimiter(pacer.withPacer(call))
 * })
 * Effect.runPromise(program).then(console.log) // prints: ok
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options: PacerOptions) => Effect.Effect<Pacer, Options.InvalidOptions> = internal.make

/**
 * Makes a pacer synchronously; throws `InvalidOptions`.
 *
 * @example
 * ```ts
 * import { Pacer } from "@sluice/adaptive"
 *
 * let window = 10
 * const pacer = Pacer.makeUnsafe({ limit: () => window, initialRtt: "100 millis" })
 * console.log(pacer.interval) // prints: 10
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe: (options: PacerOptions) => Pacer = internal.makeUnsafe

/**
 * A pacer that spreads a limiter's window: `limit` is the limiter's limit, the
 * metric key is the limiter's, and when the limiter runs a congestion window,
 * `slowStart` is `cwnd < ssthresh`.
 *
 * @example
 * ```ts
 * import { ConcurrencyLimiter, CongestionWindow, Pacer } from "@sluice/adaptive"
 * import { Retry } from "@sluice/retry"
 * import { Effect, Schedule } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const limiter = yield* ConcurrencyLimiter.make({
 *     key: "backend",
 *     algorithm: CongestionWindow.factory({ variant: "reno", backoffRatio: 0.9 })
 *   })
 *   const pacer = yield* Pacer.forLimiter(limiter)
 *   const retry = Retry.withRetry({ maxAttempts: 3, schedule: Schedule.forever })
 *   const call = Effect.succeed("ok")
 *   // every attempt takes a permit, then waits for its paced departure
 *   return yield* retry(limiter.withLimiter(pacer.withPacer(call)))
 * })
 * Effect.runPromise(program).then(console.log) // prints: ok
 * ```
 * @since 0.1.0
 * @category utils
 */
export const forLimiter: (
  limiter: ConcurrencyLimiter.Limiter,
  options?: PacerTuning
) => Effect.Effect<Pacer, Options.InvalidOptions> = internal.forLimiter

/**
 * Paces an effect (data-first or data-last).
 *
 * @example
 * ```ts
 * import { Pacer } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const pacer = Pacer.makeUnsafe({ limit: () => 20 })
 * const paced = Effect.succeed(1).pipe(Pacer.withPacer(pacer))
 * const same = Pacer.withPacer(Effect.succeed(1), pacer)
 * Effect.runPromise(Effect.all([paced, same])).then(console.log) // prints: [ 1, 1 ]
 * ```
 * @since 0.2.0
 * @category combinators
 */
export const withPacer: {
  (pacer: Pacer): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Overloaded, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, pacer: Pacer): Effect.Effect<A, E | Errors.Overloaded, R>
} = internal.paced

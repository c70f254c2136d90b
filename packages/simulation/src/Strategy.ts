/**
 * Client strategies for the simulation: named ways for a client to send its
 * operations, each assembled only from the public APIs of `@sluice/retry` and
 * `@sluice/adaptive` (the same values a service would deploy). The demo runs
 * {@link builtIns}; a user compares their own by exporting a {@link Strategy} from a
 * module (`npm run sim -- --scenario overload-2000 --strategy ./mine.ts`).
 *
 * @since 0.1.0
 */
import type { ConcurrencyLimiter, Pacer } from "@sluice/adaptive"
import type { Options } from "@sluice/core"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as internal from "./internal/strategies.js"
import type * as Simulation from "./Simulation.js"

/**
 * A named way for a client to send its operations. `make(index)` builds the client
 * of index `index` in a scope that lives for the whole run.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Strategy } from "@sluice/simulation"
 * import { Retry } from "@sluice/retry"
 * import { Effect, Schedule } from "effect"
 *
 * const twice: Strategy.Strategy = {
 *   name: "twice",
 *   description: "one immediate retry",
 *   make: () =>
 *     Effect.sync(() => {
 *       const retry = Retry.makeUnsafe({ maxAttempts: 2, schedule: Schedule.forever }).apply
 *       return { run: (attempt) => retry(attempt) }
 *     })
 * }
 * ```
 * @since 0.1.0
 * @category models
 */
export interface Strategy {
  readonly name: string
  readonly description: string
  readonly make: (index: number) => Effect.Effect<Simulation.Client, Options.InvalidOptions, Scope.Scope>
}

/**
 * Where a pacer sits in {@link limited}: inside the limiter (a paced attempt already
 * holds its permit) or outside it (the permit is taken at the paced departure).
 *
 * @since 0.1.0
 * @category models
 */
export type PacerPlacement = "inside" | "outside"

/**
 * Retries (immediately) around a concurrency limiter built from a limit algorithm.
 * With `pacing`, every attempt also waits for its paced departure
 * (`Pacer.forLimiter`): the window is spread over one round trip instead of leaving
 * as a burst. The pacer sits inside the retry (each attempt is paced) and, by
 * default, inside the limiter; `"outside"` paces before the permit, so the limiter
 * sees the real departure.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { CongestionWindow } from "@sluice/adaptive"
 * import { Strategy } from "@sluice/simulation"
 *
 * const reno: Strategy.Strategy = {
 *   name: "reno-0.7",
 *   description: "Reno with factor 0.7, paced",
 *   make: Strategy.limited(() => CongestionWindow.factory({ variant: "reno", backoffRatio: 0.7 }), {})
 * }
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const limited: (
  algorithm: () => ConcurrencyLimiter.LimiterOptions["algorithm"],
  pacing?: Pacer.PacerTuning,
  placement?: PacerPlacement
) => (index: number) => Effect.Effect<Simulation.Client, Options.InvalidOptions, Scope.Scope> =
  internal.limited

/**
 * Retry immediately, up to 10 attempts: a retry storm.
 *
 * @since 0.1.0
 * @category built-ins
 */
export const naive: Strategy = internal.naive

/**
 * Exponential backoff from 50 ms, ×2, at most 30 s, full jitter, until success.
 *
 * @since 0.1.0
 * @category built-ins
 */
export const exponential: Strategy = internal.exponential

/**
 * The same backoff, at most 3 attempts, retries within a 10% retry budget.
 *
 * @since 0.1.0
 * @category built-ins
 */
export const exponentialBudget: Strategy = internal.exponentialBudget

/**
 * `exponentialBudget`, and a hedge (`Hedge`) after the p95 of the client's recent
 * latencies, withdrawn from the same 10% retry budget.
 *
 * @since 1.1.0
 * @category built-ins
 */
export const hedgeBudget: Strategy = internal.hedgeBudget

/**
 * Congestion window, Tahoe (back to 20 on overload, factor 0.5), paced, immediate retries.
 *
 * @since 0.1.0
 * @category built-ins
 */
export const cwndTahoe: Strategy = internal.cwndTahoe

/**
 * Congestion window, Reno (factor 0.9), paced, immediate retries.
 *
 * @since 0.1.0
 * @category built-ins
 */
export const cwndReno: Strategy = internal.cwndReno

/**
 * TempoLimit (`@sluice/adaptive`'s rate-paced limit), its pacer outside the limiter so a
 * permit's grant is the departure, immediate retries.
 *
 * @since 0.2.0
 * @category built-ins
 */
export const tempo: Strategy = internal.tempo

/**
 * AIMD concurrency limit (×0.9 on overload, +1 per success while used), immediate retries.
 *
 * @since 0.1.0
 * @category built-ins
 */
export const aimd: Strategy = internal.aimd

/**
 * Delay-based limit (VegasLimit), paced, immediate retries.
 *
 * @since 0.1.0
 * @category built-ins
 */
export const vegas: Strategy = internal.vegas

/**
 * Every built-in strategy, in the order the demo shows them.
 *
 * @since 0.1.0
 * @category built-ins
 */
export const builtIns: ReadonlyArray<Strategy> = internal.builtIns

/**
 * Whether a value (for example a user module's export) is a {@link Strategy}.
 *
 * @example
 * ```ts
 * import { Strategy } from "@sluice/simulation"
 *
 * console.log(Strategy.isStrategy(Strategy.cwndReno)) // prints: true
 * console.log(Strategy.isStrategy({ name: "x" })) // prints: false
 * ```
 * @since 0.1.0
 * @category guards
 */
export const isStrategy: (u: unknown) => u is Strategy = internal.isStrategy

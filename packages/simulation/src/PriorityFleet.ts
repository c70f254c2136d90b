/**
 * A fleet of clients against a server that sheds by priority, in virtual time: the
 * model of `bench:overload`'s client fleets, for choosing how a client's concurrency
 * limit should read a shed.
 *
 * Each client is composed as `SluiceHttpClient` composes its defaults: the retry policy
 * (`maxAttempts`, a `RetryBudget`, `Retry-After` honoured up to `maxRetryAfterMillis`)
 * around the adaptive throttle's gate and a `ConcurrencyLimiter` gate (congestion
 * window). Operations arrive at `overload` × the server's capacity, spread round-robin
 * over the clients, each with a criticality (`criticalShare`, `sheddablePlusShare`, the
 * rest `SHEDDABLE`) and a deadline.
 *
 * **Details**
 *
 * - The server has `slots` units of work, each held `serviceMillis` on average
 *   (uniformly 0.5× to 1.5×). A request that finds them busy waits in a queue of
 *   `slots / 2` (most critical first) for at most `serviceMillis`; when the queue is
 *   full, its least critical waiter gives way to a more critical arrival. Every refusal
 *   is an `Overloaded` (a 503), so `SHEDDABLE` work is refused while `CRITICAL` work
 *   is still admitted.
 * - The defaults are the client's: a throttle and a congestion window per criticality
 *   level, waiters served newest first. `perLevel: false, order: "fifo"` is one state
 *   per host, oldest first: a shed `SHEDDABLE` attempt then shrinks the window the
 *   `CRITICAL` work waits behind, and the waiters sent are those with the least time
 *   left, whose work the server starts and the caller abandons (`wasted`).
 *
 * **Gotchas**
 *
 * - The attempts counted at the server include those it refused; an operation the
 *   client refused or that waited out its deadline in the client's queue never arrives.
 *
 * @since 1.1.0
 */
import type { Options as CoreOptions } from "@sluice/core"
import type * as Effect from "effect/Effect"
import * as internal from "./internal/priorityFleet.js"

/**
 * The criticality levels of the fleet's operations.
 *
 * @since 1.1.0
 * @category models
 */
export type Level = "CRITICAL" | "SHEDDABLE_PLUS" | "SHEDDABLE"

/**
 * Options of {@link run} (defaults: the `bench:overload --units 32` fleet): `clients` (4),
 * `slots` (32), `serviceMillis` (320), `networkMillis` (1, each way), `overload` (10),
 * `criticalShare` (0.05), `sheddablePlusShare` (0.15), `durationMillis` of arrivals
 * (8000), `deadlineMillis` per operation (2000), `maxAttempts` (3),
 * `maxRetryAfterMillis` (200), `client` (`"sluice"`, or `"naive"`: `maxAttempts` attempts at
 * once, whatever the answer), `perLevel` (true: the throttle and the limiter keep their
 * state per criticality level, as `SluiceHttpClient`'s `limitPerCriticality`; false: one
 * per host), `order` of the limiter's waiters (`"lifo"`, `SluiceHttpClient.makeDefault`'s
 * default, or `"fifo"`), `seed`.
 *
 * @since 1.1.0
 * @category models
 */
export interface Options {
  readonly clients?: number | undefined
  readonly slots?: number | undefined
  readonly serviceMillis?: number | undefined
  readonly networkMillis?: number | undefined
  readonly overload?: number | undefined
  readonly criticalShare?: number | undefined
  readonly sheddablePlusShare?: number | undefined
  readonly durationMillis?: number | undefined
  readonly deadlineMillis?: number | undefined
  readonly maxAttempts?: number | undefined
  readonly maxRetryAfterMillis?: number | undefined
  readonly client?: "sluice" | "naive" | undefined
  readonly perLevel?: boolean | undefined
  readonly order?: "lifo" | "fifo" | undefined
  readonly seed?: number | string | undefined
}

/**
 * What a run measured: operations and their successes (2xx within the deadline), the
 * goodput as a share of the server's capacity over the arrivals' duration, the attempts
 * that reached the server, `CRITICAL` success, per level, and how the failed operations
 * ended (an error tag, or `Deadline`).
 *
 * @since 1.1.0
 * @category models
 */
export interface Report {
  readonly operations: number
  readonly ok: number
  readonly goodputRatio: number
  readonly attemptsAtServer: number
  readonly attemptsPerOperation: number
  /** attempts whose work the server started and the caller abandoned (its deadline passed) */
  readonly wasted: number
  readonly criticalSuccess: number
  readonly byLevel: Readonly<Record<Level, { readonly operations: number; readonly ok: number }>>
  readonly failures: Readonly<Record<string, number>>
}

/**
 * Runs the fleet in virtual time (a few seconds of wall time for the defaults).
 *
 * @example
 * ```ts
 * // snippet: compile-only — takes seconds of CPU time (the simulation's tests run it)
 * import { PriorityFleet } from "@sluice/simulation"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const perLevel = yield* PriorityFleet.run({ seed: 1 })
 *   const perHost = yield* PriorityFleet.run({ seed: 1, perLevel: false, order: "fifo" })
 *   return perLevel.goodputRatio / perHost.goodputRatio
 * })
 * ```
 * @since 1.1.0
 * @category utils
 */
export const run: (options?: Options) => Effect.Effect<Report, CoreOptions.InvalidOptions> = internal.run

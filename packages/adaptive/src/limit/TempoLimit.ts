/**
 * TempoLimit: a rate-paced limit algorithm that runs a backend near its physical limit.
 *
 * Its rules are in the adaptive README ("TempoLimit") and in the kernel's
 * `@sluice/kernel/limit/TempoLimit`, which this module binds.
 *
 * @since 0.2.0
 */
import type { Options } from "@sluice/core"
import type * as Kernel from "@sluice/kernel/limit/TempoLimit"
import type * as Effect from "effect/Effect"
import * as internal from "../internal/limit/tempoLimit.js"
import type { Departure, Factory, LimitAlgorithm } from "./LimitAlgorithm.js"

/**
 * Options (one default set):
 * `initial` window (20), `minLimit` (1), `maxLimit` (∞), `startupGain` (1.25: start-up
 * paces at 1.25 × the window per round trip), `cut` (0.6: when most outcomes of a round
 * trip are errors), `probeSize` (2), `firstProbe` (5 round trips after start-up),
 * `probeEvery` (8 round trips after a failed probe or a counted error), `probeDeadline`
 * (1.5 × the shortest rejection round trip), `headroom` (1.25: the limiter's cap over
 * the window). The rules are the kernel's (`@sluice/kernel/limit/TempoLimit`).
 *
 * @since 0.2.0
 * @category models
 */
export interface TempoLimitOptions {
  readonly initial?: number | undefined
  readonly minLimit?: number | undefined
  readonly maxLimit?: number | undefined
  readonly startupGain?: number | undefined
  readonly cut?: number | undefined
  readonly probeSize?: number | undefined
  readonly probeEvery?: number | undefined
  readonly firstProbe?: number | undefined
  readonly probeDeadline?: number | undefined
  readonly headroom?: number | undefined
}

/**
 * The options with every default filled in.
 *
 * @since 0.2.0
 * @category models
 */
export interface TempoLimitConfig extends Kernel.Config {}

/**
 * A TempoLimit limit. `window` is the target in flight, `phase` `"startup"` or `"steady"`,
 * `minRtt` / `minRejectRtt` the shortest success and rejection round trips seen.
 *
 * @since 0.2.0
 * @category models
 */
export interface TempoLimit extends LimitAlgorithm {
  readonly options: TempoLimitConfig
  readonly window: number
  readonly phase: "startup" | "steady"
  readonly minRtt: number | undefined
  readonly minRejectRtt: number | undefined
  readonly pacingInterval: number | undefined
  readonly nextTimer: number | undefined
  onDeparture(departure: Departure): number | undefined
  takeBurst(now: number): number
  onTimer(now: number): void
}

/**
 * Makes a TempoLimit limit, failing with `InvalidOptions` on bad options.
 *
 * @example
 * ```ts
 * import { TempoLimit } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const program = Effect.map(TempoLimit.make(), (tempo) => tempo.window)
 * Effect.runPromise(program).then(console.log) // prints: 20
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const make: (options?: TempoLimitOptions) => Effect.Effect<TempoLimit, Options.InvalidOptions> =
  internal.make

/**
 * Makes a TempoLimit limit synchronously; throws `InvalidOptions`.
 *
 * @example
 * ```ts
 * import { TempoLimit } from "@sluice/adaptive"
 *
 * const tempo = TempoLimit.makeUnsafe()
 * console.log(tempo.limit) // prints: 20
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const makeUnsafe: (options?: TempoLimitOptions) => TempoLimit = internal.makeUnsafe

/**
 * A factory for `ConcurrencyLimiter` (one TempoLimit per key). Pair it with
 * `Pacer.forLimiter`, placed outside the limiter.
 *
 * @example
 * ```ts
 * import { ConcurrencyLimiter, Pacer, TempoLimit } from "@sluice/adaptive"
 * import { Retry } from "@sluice/retry"
 * import { Effect, Schedule } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const limiter = yield* ConcurrencyLimiter.make({ key: "backend", algorithm: TempoLimit.factory() })
 *   const pacer = yield* Pacer.forLimiter(limiter, { maxQueue: 100_000 })
 *   const retry = Retry.withRetry({ maxAttempts: 3, schedule: Schedule.forever })
 *   // each attempt waits for its paced departure, then takes a permit (the departure)
 *   return yield* retry(pacer.withPacer(limiter.withLimiter(Effect.succeed("ok"))))
 * })
 * Effect.runPromise(Effect.scoped(program)).then(console.log) // prints: ok
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const factory: (options?: TempoLimitOptions) => Factory = internal.factory

/**
 * Tempo: a rate-paced limit algorithm that runs a backend near its physical limit.
 *
 * Its rules are in the adaptive README ("Tempo") and in the kernel's
 * `@sluice/kernel/limit/Tempo`, which this module binds.
 *
 * @since 0.2.0
 */
import type { Options } from "@sluice/core"
import type * as Kernel from "@sluice/kernel/limit/Tempo"
import type * as Effect from "effect/Effect"
import * as internal from "./internal/tempo.js"
import type { Departure, Factory, LimitAlgorithm } from "./LimitAlgorithm.js"

/**
 * Options (one default set):
 * `initial` window (20), `minLimit` (1), `maxLimit` (∞), `startupGain` (1.25: start-up
 * paces at 1.25 × the window per round trip), `cut` (0.6: when most outcomes of a round
 * trip are errors), `probeSize` (2), `firstProbe` (5 round trips after start-up),
 * `probeEvery` (8 round trips after a failed probe or a counted error), `probeDeadline`
 * (1.5 × the shortest rejection round trip), `headroom` (1.25: the limiter's cap over
 * the window). The rules are the kernel's (`@sluice/kernel/limit/Tempo`).
 *
 * @since 0.2.0
 * @category models
 */
export interface TempoOptions {
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
export interface TempoConfig extends Kernel.Config {}

/**
 * A Tempo limit. `window` is the target in flight, `phase` `"startup"` or `"steady"`,
 * `minRtt` / `minRejectRtt` the shortest success and rejection round trips seen.
 *
 * @since 0.2.0
 * @category models
 */
export interface Tempo extends LimitAlgorithm {
  readonly options: TempoConfig
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
 * Makes a Tempo limit, failing with `InvalidOptions` on bad options.
 *
 * @example
 * ```ts
 * import { Tempo } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const program = Effect.map(Tempo.make(), (tempo) => tempo.window) // 20
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const make: (options?: TempoOptions) => Effect.Effect<Tempo, Options.InvalidOptions> = internal.make

/**
 * Makes a Tempo limit synchronously; throws `InvalidOptions`.
 *
 * @example
 * ```ts
 * import { Tempo } from "@sluice/adaptive"
 *
 * const tempo = Tempo.unsafeMake()
 * tempo.limit // 20
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const unsafeMake: (options?: TempoOptions) => Tempo = internal.unsafeMake

/**
 * A factory for `ConcurrencyLimiter` (one Tempo per key). Pair it with
 * `Pacer.forLimiter`, placed outside the limiter.
 *
 * @example
 * ```ts
 * import { ConcurrencyLimiter, Pacer, Tempo } from "@sluice/adaptive"
 * import { Retry } from "@sluice/retry"
 * import { Effect, Schedule } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const limiter = yield* ConcurrencyLimiter.make({ key: "backend", algorithm: Tempo.factory() })
 *   const pacer = yield* Pacer.forLimiter(limiter, { maxQueue: 100_000 })
 *   const retry = Retry.withRetry({ maxAttempts: 3, schedule: Schedule.forever })
 *   // each attempt waits for its paced departure, then takes a permit (the departure)
 *   return yield* retry(pacer.withPacer(limiter.withLimiter(Effect.succeed("ok"))))
 * })
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const factory: (options?: TempoOptions) => Factory = internal.factory

/**
 * Client-side adaptive throttling (Google SRE, "Handling Overload").
 *
 * Per backend key the throttle counts, over a rolling window (default 2 minutes),
 * `requests` (everything the application tried, including what the throttle
 * failed locally) and `accepts` (requests the backend answered without a
 * rejection). Before sending, it fails the request locally with
 * `Errors.Throttled` with probability
 *
 * ```text
 * p = max(0, (requests − K × accepts) / (requests + 1))
 * ```
 *
 * so once a backend rejects more than it accepts, the excess never leaves the
 * client. At steady state, against a backend that can accept a share `a` of the
 * offered requests, `p ≈ 1 − K·a` and the backend sees about `K` times what it
 * accepts: the share of requests that reach it and are rejected falls from
 * `1 − a` to `(K − 1)·a`.
 *
 * Guards:
 * - `p` is capped at `maxProbability` (default 0.9, must be below 1), so the
 *   backend is always probed and the throttle notices when it recovers;
 * - below `minRequestRate` requests per second over the window (default 1/s,
 *   i.e. fewer than `minRequestRate × window` requests in the window) nothing is
 *   throttled, so a quiet client is never locked out.
 *
 * Criticality: K depends on `Criticality.current`. With the base `k` (default 2):
 *
 * | level | K | with k = 2 |
 * |---|---|---|
 * | `SHEDDABLE` | `1 + 0.5 (k − 1)` | 1.5 |
 * | `SHEDDABLE_PLUS` | `1 + 0.75 (k − 1)` | 1.75 |
 * | `CRITICAL` (default) | `k` | 2 |
 * | `CRITICAL_PLUS` | `1 + 2 (k − 1)` | 3 |
 *
 * A smaller K throttles earlier and harder, so less critical work is throttled
 * first. `kByCriticality` replaces the mapping (every K ≥ 1, not decreasing with
 * criticality). With `k = 1` every level gets K = 1.
 *
 * What the throttle learns comes from core's one classifier (`Outcome`): a
 * *dropped* call (remote `Overloaded`, `QuotaExceeded`, a timeout, a `DontRetry`
 * wrapping one of them, or an error `isRejection` names) is a request the backend
 * did not accept; a success or any other failure is an accept (the backend
 * answered); work refused on this side (`Throttled`, `CircuitOpen`, this process's
 * own limiter or shedder) and calls interrupted by their callers are not counted
 * at all: they say nothing about the backend. The state per key is bounded (`maxKeys`, least
 * recently used key evicted).
 *
 * A request is counted as it is admitted, before its call (go-zero #5011), and its
 * outcome is filed beside it, in the bucket of the request's time: the two leave the
 * window together, and an outcome that comes after its request left counts nothing.
 * A call still in flight is a request but neither an accept nor a rejection, so the
 * formula runs over the settled ones: a burst of calls in flight is never read as
 * rejections. Gotchas: a backend that stops answering is learnt from as its attempts
 * time out, so keep the window at least as long as the longest attempt timeout
 * (`SluiceHttpClient` refuses an `attemptTimeout` longer than its throttle's window);
 * `requests` in `statsUnsafe` and in the metric include the calls in flight, and a call
 * refused on this side or abandoned is taken back from the window (not from the
 * metric's count).
 *
 * Randomness comes from Effect's `Random` (seed it with `Random.withSeed`
 * for reproducible runs); time from Effect's `Clock`.
 *
 * Metrics: `sluice_adaptive_throttle_requests` and `_accepts` (attribute `key`),
 * `_throttled` and the gauge `_probability` (attributes `key`, `criticality`). Keys
 * beyond the first `maxKeys` distinct ones are labelled `_other`. They are updated in the
 * context the throttle was made in (its `MetricRegistry`).
 *
 * @since 0.1.0
 */
import type { Admission, Criticality, Errors, Options } from "@sluice/core"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import type * as Metric from "effect/Metric"
import type * as Stream from "effect/Stream"
import * as internal from "./internal/adaptiveThrottle.js"
import * as Kernel from "@sluice/kernel/throttle/AdaptiveThrottle"
import type * as Config from "effect/Config"

/**
 * The throttle service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /**
   * Runs `self` against the backend `key`, or fails it locally with
   * `Throttled`. The success path is one synchronous step plus, only when the
   * probability is above zero, one draw from `Random`.
   *
   * @since 0.2.0
   */
  readonly withThrottle: <A, E, R>(
    self: Effect.Effect<A, E, R>,
    key: string
  ) => Effect.Effect<A, E | Errors.Throttled, R>
  /** The current probability for `key` at `criticality` (default `CRITICAL`), reading the `Clock`. */
  readonly probability: (key: string, criticality?: Criticality.Criticality) => Effect.Effect<number>
  /**
   * Synchronous peek of the current probability (for metrics and simulations).
   * Without `nowMillis` it reads the `Clock` the throttle was built with.
   */
  readonly probabilityUnsafe: (
    key: string,
    criticality?: Criticality.Criticality,
    nowMillis?: number
  ) => number
  /**
   * The throttle's side of the admission protocol for backend `key`, to compose with
   * other gates in one step through `Admission.guard` (the fused client stack does).
   * A ticket is settled by outcome: `success` and `failed` count as accepts,
   * `dropped` as a request the backend did not accept, `refused` and `ignored` not
   * at all.
   */
  readonly gate: (key: string) => Admission.Gate<Ticket, Errors.Throttled>
  /**
   * Synchronous peek of the windowed counts of `key`: `requests` (counted as each is
   * admitted, before its call, so those in flight are in), `accepts`, and `inFlight`, the
   * requests not settled yet (the formula runs over `requests − inFlight`).
   */
  readonly statsUnsafe: (
    key: string,
    nowMillis?: number
  ) => { readonly requests: number; readonly accepts: number; readonly inFlight: number }
  /** The keys currently tracked (at most `maxKeys`). */
  readonly keysUnsafe: () => ReadonlyArray<string>
  /** The K used for a level. */
  readonly k: (criticality: Criticality.Criticality) => number
  readonly maxProbability: number
  readonly minRequestRate: number
  readonly window: Duration.Duration
  /**
   * Every local refusal, as it happens (published off the success path only; a
   * subscriber that falls behind by more than 256 events loses the oldest).
   *
   * @since 0.2.0
   */
  readonly events: Stream.Stream<Event>
}

/**
 * What the throttle reports on {@link Service.events}: a request failed locally with
 * `Throttled` (the same moment the `throttled` metric counts).
 *
 * @since 0.2.0
 * @category models
 */
export type Event = {
  readonly _tag: "Throttled"
  readonly key: string
  readonly criticality: Criticality.Criticality
  readonly probability: number
}

/**
 * The service (a `Context.Service` key).
 *
 * @since 0.1.0
 * @category tags
 */
export class AdaptiveThrottle extends Context.Service<AdaptiveThrottle, Service>()(
  "@sluice/adaptive/AdaptiveThrottle"
) {}

/**
 * A request the throttle admitted, to be settled through its gate.
 *
 * @since 0.2.0
 * @category models
 */
export interface Ticket {
  readonly key: string
}

/**
 * Options, all optional: `window` (default 2 minutes), `buckets` of the rolling
 * counters (default 24), `k` (≥ 1, default 2), `kByCriticality` (overrides the
 * mapping from `k`), `maxProbability` (in [0, 1), default 0.9), `minRequestRate`
 * (requests per second, default 1), `maxKeys` (default 1024), `isRejection`
 * (default: `Overloaded`, `QuotaExceeded`, or a `DontRetry` wrapping one).
 *
 * @since 0.1.0
 * @category models
 */
export interface AdaptiveThrottleOptions {
  readonly window?: Duration.Input | undefined
  readonly buckets?: number | undefined
  readonly k?: number | undefined
  readonly kByCriticality?:
    | {
        readonly SHEDDABLE: number
        readonly SHEDDABLE_PLUS: number
        readonly CRITICAL: number
        readonly CRITICAL_PLUS: number
      }
    | undefined
  readonly maxProbability?: number | undefined
  readonly minRequestRate?: number | undefined
  readonly maxKeys?: number | undefined
  readonly isRejection?: ((error: unknown) => boolean) | undefined
}

/**
 * The metrics the throttle updates, for reading them back (give them the attribute `key`,
 * and `criticality` for `throttled` and `probability`).
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads a metric, shown for its attribute names
 * import { AdaptiveThrottle } from "@sluice/adaptive"
 * import { Metric } from "effect"
 *
 * const throttledForUsers = Metric.value(
 *   Metric.withAttributes(AdaptiveThrottle.metrics.throttled, { key: "users-api", criticality: "CRITICAL" })
 * )
 * ```
 * @since 0.1.0
 * @category metrics
 */
export const metrics: {
  readonly requests: Metric.Counter<number>
  readonly accepts: Metric.Counter<number>
  readonly throttled: Metric.Counter<number>
  readonly probability: Metric.Gauge<number>
} = internal.metrics

/**
 * The default "not accepted" predicate.
 *
 * @example
 * ```ts
 * import { AdaptiveThrottle } from "@sluice/adaptive"
 * import { Errors } from "@sluice/core"
 *
 * console.log(AdaptiveThrottle.defaultIsRejection(new Errors.Overloaded({ reason: "server" }))) // prints: true
 * // the backend answered: not a rejection
 * console.log(AdaptiveThrottle.defaultIsRejection(new Error("404"))) // prints: false
 * ```
 * @since 0.1.0
 * @category constants
 */
export const defaultIsRejection: (error: unknown) => boolean = internal.defaultIsRejection

/**
 * The K of each level derived from a base `k` (see the module documentation).
 *
 * @example
 * ```ts
 * import { AdaptiveThrottle } from "@sluice/adaptive"
 *
 * console.log(AdaptiveThrottle.defaultKByCriticality(2)) // prints: { SHEDDABLE: 1.5, SHEDDABLE_PLUS: 1.75, CRITICAL: 2, CRITICAL_PLUS: 3 }
 * ```
 * @since 0.1.0
 * @category constants
 */
export const defaultKByCriticality: (k: number) => Record<Criticality.Criticality, number> =
  Kernel.defaultKByCriticality

/**
 * The steady-state probability the formula predicts for a backend that accepts
 * `acceptShare` of the requests offered (ignoring the `+ 1`, before the cap).
 *
 * @example
 * ```ts
 * import { AdaptiveThrottle } from "@sluice/adaptive"
 *
 * console.log(AdaptiveThrottle.steadyStateProbability(0.3, 2)) // prints: 0.4
 * ```
 * @since 0.1.0
 * @category utils
 */
export const steadyStateProbability: (acceptShare: number, k: number) => number =
  Kernel.steadyStateProbability

/**
 * Makes a throttle (for when one program needs several).
 *
 * @example
 * ```ts
 * import { AdaptiveThrottle } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const throttle = yield* AdaptiveThrottle.make({ k: 2 })
 *   console.log(yield* throttle.withThrottle(Effect.succeed("ok"), "users-api")) // prints: ok
 * })
 * Effect.runPromise(program)
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options?: AdaptiveThrottleOptions) => Effect.Effect<Service, Options.InvalidOptions> =
  internal.make

/**
 * A layer providing the throttle; fails with `InvalidOptions` naming the field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { AdaptiveThrottle } from "@sluice/adaptive"
 *
 * const ThrottleLive = AdaptiveThrottle.layer({ window: "2 minutes", k: 2, maxProbability: 0.9 })
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options?: AdaptiveThrottleOptions
): Layer.Layer<AdaptiveThrottle, Options.InvalidOptions> =>
  Layer.effect(AdaptiveThrottle, internal.make(options))

/**
 * Runs an effect through the throttle in context, for backend `key`
 * (data-first or data-last).
 *
 * @example
 * ```ts
 * import { AdaptiveThrottle } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const call = Effect.succeed("ok").pipe(AdaptiveThrottle.withThrottle("users-api"))
 * const same = AdaptiveThrottle.withThrottle(Effect.succeed("ok"), "users-api")
 * const runnable = call.pipe(Effect.provide(AdaptiveThrottle.layer()))
 * Effect.runPromise(runnable).then(console.log) // prints: ok
 * ```
 * @since 0.1.0
 * @since 0.2.0
 * @category combinators
 */
export const withThrottle: {
  (
    key: string
  ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Throttled, R | AdaptiveThrottle>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    key: string
  ): Effect.Effect<A, E | Errors.Throttled, R | AdaptiveThrottle>
} = dual(
  2,
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    key: string
  ): Effect.Effect<A, E | Errors.Throttled, R | AdaptiveThrottle> =>
    Effect.flatMap(AdaptiveThrottle, (throttle) => throttle.withThrottle(self, key))
)

/**
 * {@link layer} with its options read from `Config` (e.g. environment variables): a
 * missing or malformed value fails the layer with `ConfigError`, a bad value with
 * `InvalidOptions` naming the field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import { AdaptiveThrottle } from "@sluice/adaptive"
 * import { Config } from "effect"
 *
 * const Live = AdaptiveThrottle.layerConfig(Config.all({ k: Config.Number("THROTTLE_K").pipe(Config.withDefault(2)) }))
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<AdaptiveThrottleOptions>
): Layer.Layer<AdaptiveThrottle, Options.InvalidOptions | Config.ConfigError> =>
  Layer.unwrap(Effect.map(config, (options) => layer(options)))

/**
 * A circuit breaker: stop calling a dependency that keeps failing, and probe it
 * again after a while.
 *
 * - **closed**: calls pass. The breaker trips after `consecutiveFailures` failures in
 *   a row, or when the share of failures over a sliding `failureRatio.window` reaches
 *   `failureRatio.ratio` once at least `failureRatio.minimumCalls` calls completed in it.
 * - **open**: calls fail fast with `Errors.CircuitOpen`, which says when the breaker
 *   half-opens (`halfOpenAt`, epoch millis from Effect's `Clock`) and `retryAfter`. It
 *   stays open for `openFor`: a fixed duration, or a `Schedule` whose successive delays
 *   give the open duration of successive trips (e.g. `Schedule.exponential("1 second")`).
 * - **half-open**: at most `halfOpenProbes` calls (K) are let through; the breaker
 *   closes once K probes succeeded and re-opens on the first probe failure. Other calls
 *   are refused with `CircuitOpen`.
 * - `isolate` forces it open until `reset`; `reset` closes it and forgets its history.
 *
 * The breaker speaks the admission protocol (`Admission`): {@link CircuitBreaker.gate}
 * refuses with `CircuitOpen`, and `withBreaker` is `Admission.guard([breaker.gate])`.
 * It learns from the `Outcome` core computed once from the call's `Exit`, never from a
 * classification of its own:
 *
 * | outcome | counts as |
 * |---|---|
 * | `success` | a success |
 * | `dropped`, `failed` | a failure, if `isFailure` accepts the typed error (default: every error; defects always); otherwise a success (the dependency answered) |
 * | `refused` (the breaker or a gate inside it said no: a local limiter, throttle, shedder) | nothing |
 * | `ignored` (the caller interrupted the call; a 4xx that says nothing about load) | nothing |
 *
 * A probe whose outcome counts nothing gives its slot back. Outcomes of calls
 * admitted before a state change are ignored.
 *
 * The closed-state success path is one synchronous state check plus a counter update;
 * a `Clock` read happens only when a failure ratio is configured or something fails.
 *
 * The state machine is `@sluice/kernel/breaker/CircuitBreaker`; this module binds it to the
 * `Clock`, `Outcome`, Metrics, the `stateChanges` stream and `CircuitOpen`.
 *
 * Metrics (attribute `name`): `sluice_circuit_breaker_state` (gauge: 0 closed, 1 half-open,
 * 2 open), `sluice_circuit_breaker_transitions` (counter, attributes `from` and `to` too),
 * `sluice_circuit_breaker_rejected` (counter).
 *
 * **Details**
 *
 * - A `Schedule` given as `openFor` is stepped once per trip, with the number of trips
 *   since the breaker last closed as its input; the delay of each step is the open
 *   duration. When the breaker closes, the next trip starts the Schedule over (a fresh
 *   `Schedule.toStep`). When the Schedule ends, later trips reuse its last delay.
 * - The Schedule is stepped synchronously in the context the breaker was made in: the
 *   breaker decides inside `settle`, outside any fiber. A Schedule that needs to wait or
 *   fails also keeps the last delay.
 * - Metrics are updated in the context the breaker was made in (its
 *   `Metric.MetricRegistry` and metric attributes), one series per attribute set.
 *
 * **Gotchas**
 *
 * - Cap an exponential `openFor`, e.g. with
 *   `Schedule.min([Schedule.exponential("1 second"), Schedule.spaced("1 minute")])`, or a
 *   dependency that keeps failing its probes keeps its breaker open longer and longer.
 * - `state` reports `"half-open"` for an open breaker whose time is up, before any call
 *   has arrived to move it.
 *
 * @since 0.1.0
 */
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Pipeable } from "effect/Pipeable"
import type * as Schedule from "effect/Schedule"
import type * as Stream from "effect/Stream"
import type * as Admission from "./Admission.js"
import type { CircuitOpen } from "./Errors.js"
import * as internal from "./internal/circuitBreaker.js"
import type { InvalidOptions } from "./Options.js"

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
 * The state a breaker reports. An isolated breaker reports `"open"`.
 *
 * @since 0.1.0
 * @category models
 */
export type State = "closed" | "open" | "half-open"

/**
 * A state transition, published on {@link CircuitBreaker.stateChanges}.
 *
 * @since 0.1.0
 * @category models
 */
export interface StateChange {
  readonly name: string
  readonly from: State
  readonly to: State
  /** Epoch millis from Effect's `Clock`. */
  readonly at: number
}

/**
 * A call a breaker admitted through its {@link CircuitBreaker.gate}.
 *
 * @since 0.2.0
 * @category models
 */
export interface Ticket {
  /** The state generation it was admitted under: once the breaker changes state, its outcome is ignored. */
  readonly generation: number
  /** Whether it is one of the K half-open probes. */
  readonly probe: boolean
}

/**
 * Options, validated by a Schema at construction:
 *
 * - `name`: non-empty; tags metrics and `CircuitOpen`.
 * - `consecutiveFailures`: positive integer. Defaults to 5 when `failureRatio` is not
 *   given; when only `failureRatio` is given, only the ratio trips the breaker.
 * - `failureRatio`: `ratio` in (0, 1], `window` a positive duration, `minimumCalls` a
 *   positive integer, `buckets` (default 10) slicing the window.
 * - `openFor`: a positive duration (default 5 seconds) or a `Schedule` (its delays are
 *   the open durations of successive trips until the breaker closes again; when it
 *   ends, the last delay is reused).
 * - `halfOpenProbes`: positive integer, default 1.
 * - `isFailure`: which typed failures of outcome `dropped` or `failed` count (default:
 *   all); one it rejects counts as a success. Defects always count.
 * - `onStateChange`: called synchronously on every transition (exceptions ignored).
 *
 * @since 0.1.0
 * @category models
 */
export interface CircuitBreakerOptions {
  readonly name: string
  readonly consecutiveFailures?: number | undefined
  readonly failureRatio?:
    | {
        readonly ratio: number
        readonly window: Duration.Input
        readonly minimumCalls: number
        readonly buckets?: number | undefined
      }
    | undefined
  readonly openFor?: Duration.Input | Schedule.Schedule<unknown, unknown> | undefined
  readonly halfOpenProbes?: number | undefined
  readonly isFailure?: ((error: unknown) => boolean) | undefined
  readonly onStateChange?: ((change: StateChange) => void) | undefined
}

/**
 * A circuit breaker. Mutable; its state lives in this value, so share one value
 * between every call to the same dependency (a Layer does that for you). Every
 * method works unbound (`call.pipe(breaker.withBreaker)`).
 *
 * @since 0.1.0
 * @since 0.2.0
 * @category models
 */
export interface Service extends Pipeable {
  readonly [TypeId]: TypeId
  readonly name: string
  /**
   * Runs `self` through the breaker, failing fast with `CircuitOpen` while open
   * (`Admission.guard([breaker.gate])`).
   */
  readonly withBreaker: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | CircuitOpen, R>
  /**
   * The breaker's side of the admission protocol, to compose with other gates in one
   * step through `Admission.guard`: a ticket while closed (or for one of the K
   * half-open probes), else a refusal with `CircuitOpen`. Settled with the outcome
   * (see the module notes); the typed error is judged by `isFailure` from the `cause`
   * that `settle` is given.
   *
   * @since 0.2.0
   */
  readonly gate: Admission.Gate<Ticket, CircuitOpen>
  /** The current state (an open breaker whose time is up reports `"half-open"`). */
  readonly state: Effect.Effect<State>
  /** Forces the breaker open until {@link CircuitBreaker.reset}. */
  readonly isolate: Effect.Effect<void>
  /** Closes the breaker and forgets failures, trips and probes. */
  readonly reset: Effect.Effect<void>
  /**
   * State transitions from the moment the stream is run. A subscriber that falls
   * more than 256 changes behind loses the oldest ones.
   */
  readonly stateChanges: Stream.Stream<StateChange>
  /** {@link CircuitBreaker.state} at the given clock reading (epoch millis). */
  readonly stateUnsafe: (nowMillis: number) => State
  /** {@link CircuitBreaker.isolate} at the given clock reading. */
  readonly isolateUnsafe: (nowMillis: number) => void
  /** {@link CircuitBreaker.reset} at the given clock reading. */
  readonly resetUnsafe: (nowMillis: number) => void
}

/**
 * Makes a breaker, failing with `InvalidOptions` naming the bad field.
 *
 * @example
 * ```ts
 * import { CircuitBreaker } from "@sluice/core"
 * import { Effect, Schedule } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const breaker = yield* CircuitBreaker.make({
 *     name: "redis",
 *     consecutiveFailures: 3,
 *     openFor: Schedule.exponential("1 second"),
 *     halfOpenProbes: 2
 *   })
 *   return yield* Effect.succeed("pong").pipe(CircuitBreaker.withBreaker(breaker))
 * })
 * Effect.runPromise(program).then(console.log) // prints: pong
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options: CircuitBreakerOptions) => Effect.Effect<Service, InvalidOptions> = internal.make

/**
 * Is this value a {@link CircuitBreaker}?
 *
 * @since 0.1.0
 * @category guards
 */
export const isCircuitBreaker: (u: unknown) => u is Service = internal.isCircuitBreaker

/**
 * Runs an effect through a breaker (data-first or data-last).
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { CircuitBreaker } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * declare const breaker: CircuitBreaker.Service
 * const guarded = Effect.succeed(1).pipe(CircuitBreaker.withBreaker(breaker))
 * const same = CircuitBreaker.withBreaker(Effect.succeed(1), breaker)
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const withBreaker: {
  (breaker: Service): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | CircuitOpen, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, breaker: Service): Effect.Effect<A, E | CircuitOpen, R>
} = internal.withBreaker

/**
 * The service tag, for programs with one breaker in their context. For several
 * breakers, declare one tag class each with {@link Tag}.
 *
 * @example
 * ```ts
 * import { CircuitBreaker } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const breaker = yield* CircuitBreaker.CircuitBreaker
 *   return yield* breaker.withBreaker(Effect.succeed(1))
 * }).pipe(Effect.provide(CircuitBreaker.layer({ name: "backend" })))
 * Effect.runPromise(program).then(console.log) // prints: 1
 * ```
 * @since 0.1.0
 * @since 0.2.0
 * @category tags
 */
export class CircuitBreaker extends Context.Service<CircuitBreaker, Service>()(
  "@sluice/core/CircuitBreaker"
) {}

/**
 * A tag class base for a keyed breaker: each class is a type of its own, so a program
 * that needs the "postgres" breaker does not compile until that very breaker is provided.
 *
 * @example
 * ```ts
 * import { CircuitBreaker } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * class Db extends CircuitBreaker.Tag("postgres")<Db>() {}
 * const DbLive = CircuitBreaker.layer({ name: "postgres" }, Db)
 * const program = Effect.flatMap(Db, (breaker) => breaker.withBreaker(Effect.succeed(1)))
 * const runnable = program.pipe(Effect.provide(DbLive)) // Effect<number, CircuitOpen | InvalidOptions>
 * Effect.runPromise(runnable).then(console.log) // prints: 1
 * ```
 * @since 0.1.0
 * @category constructors
 * @since 0.2.0
 * @category tags
 */
export const Tag =
  <const Key extends string>(key: Key) =>
  <Self>(): Context.ServiceClass<Self, `@sluice/core/CircuitBreaker/${Key}`, Service> =>
    Context.Service<Self, Service>()(
      `@sluice/core/CircuitBreaker/${key}` as `@sluice/core/CircuitBreaker/${Key}`
    )

/**
 * A Layer that builds a breaker and provides it under {@link CircuitBreaker},
 * or under the given tag (a {@link Tag} class).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: {
  (options: CircuitBreakerOptions): Layer.Layer<CircuitBreaker, InvalidOptions>
  <I>(options: CircuitBreakerOptions, tag: Context.Key<I, Service>): Layer.Layer<I, InvalidOptions>
} = (options: CircuitBreakerOptions, tag?: Context.Key<any, Service>): Layer.Layer<any, InvalidOptions> =>
  Layer.effect(tag ?? CircuitBreaker, internal.make(options))

/**
 * {@link layer} with the options read from a `Config` (fails with `ConfigError` or
 * `InvalidOptions`), under {@link CircuitBreaker} or the given tag.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import { CircuitBreaker } from "@sluice/core"
 * import { Config } from "effect"
 *
 * const BreakerLive = CircuitBreaker.layerConfig(
 *   Config.all({ name: Config.succeed("db"), consecutiveFailures: Config.Int("DB_BREAKER_FAILURES") })
 * )
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerConfig: {
  (
    config: Config.Config<CircuitBreakerOptions>
  ): Layer.Layer<CircuitBreaker, InvalidOptions | Config.ConfigError>
  <I>(
    config: Config.Config<CircuitBreakerOptions>,
    tag: Context.Key<I, Service>
  ): Layer.Layer<I, InvalidOptions | Config.ConfigError>
} = (
  config: Config.Config<CircuitBreakerOptions>,
  tag?: Context.Key<any, Service>
): Layer.Layer<any, InvalidOptions | Config.ConfigError> =>
  Layer.effect(tag ?? CircuitBreaker, Effect.flatMap(config, internal.make))

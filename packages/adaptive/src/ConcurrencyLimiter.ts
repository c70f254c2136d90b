/**
 * The concurrency limiter: the enforcement half of adaptive concurrency control.
 *
 * A limiter grants permits while fewer than `limit` requests are in flight;
 * the limit comes from a pluggable {@link LimitAlgorithm.LimitAlgorithm}
 * (congestion window by default, or AIMD, VegasLimit, your own). Every request that
 * held a permit reports its outcome to the algorithm: *success* with its
 * round-trip time, *dropped* (`Overloaded`, a `Cause.TimeoutError`, or what
 * `isDrop` says) or *ignored* (any other error, or interruption).
 *
 * Callers that find no free permit wait in a bounded queue (FIFO by default,
 * LIFO as an option, at most `maxWait`); a full queue or an expired wait fails
 * with `Overloaded` without running the effect. Waiters are served by
 * criticality (most critical first); `partitions` give levels a guaranteed
 * share of the limit: while the limit is reached, a level below its share is
 * served before everyone else, and when the queue is full the least critical
 * waiter is displaced to make room for more critical work. Below the limit any
 * level may borrow unused capacity. Within a level, work over its customer's
 * quota (`Criticality.currentOverQuota`) waits behind the level's other work and
 * is displaced before it, never before a less critical level's.
 *
 * The uncontended path is synchronous bookkeeping (one clock read, no
 * Deferred, no Ref); interruption never leaks a permit.
 *
 * **Deadlines.** A waiter that must finish by a deadline ({@link Limiter.enterBy};
 * `Middleware.loadShed` passes the request's `Retry.currentDeadline`) is refused once
 * the deadline has passed (`"deadline"`) or cannot be met (`"deadline-unmeetable"`):
 * its time left is below the limiter's expected service time, the exponentially
 * smoothed round-trip time of the work it admitted that succeeded (gain 1/8, TCP's
 * SRTT). Judged when it arrives, while it waits, and when a permit frees up for it.
 *
 * Gotchas: a cold limiter has no estimate, so only a passed deadline refuses; the
 * estimate is a mean, so work of very different costs behind one limiter (a fast
 * read and a slow report) is judged by their mix — give them limiters of their own.
 *
 * Metrics (attribute `key`): `sluice_concurrency_limiter_limit`,
 * `sluice_concurrency_limiter_in_flight`, `sluice_concurrency_limiter_queued`
 * (gauges) and `sluice_concurrency_limiter_rejected` (counter, attribute
 * `reason`: `limit`, `queue-full`, `queue-timeout`, `displaced`, `deadline`,
 * `deadline-unmeetable`), updated in the context
 * the limiter (or the service) was made in: its `MetricRegistry`, or the default one for
 * `makeUnsafe`.
 *
 * @since 0.1.0
 */
import type { Admission, Criticality, Errors, Options } from "@sluice/core"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import type * as Stream from "effect/Stream"
import type { Pipeable } from "effect/Pipeable"
import * as internal from "./internal/concurrencyLimiter.js"
import type * as LimitAlgorithm from "./limit/LimitAlgorithm.js"
import type * as Config from "effect/Config"
import * as Effect from "effect/Effect"

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
 * Options of one limiter: `algorithm` (a factory, default
 * `CongestionWindow.factory()`), `maxQueue` (waiters, default 1000; 0 = never
 * wait), `maxWait` (default: no limit), `order` (`"fifo"` | `"lifo"`),
 * `partitions` (guaranteed share of the limit per criticality level, each in
 * [0, 1], adding up to at most 1), `isDrop` (extra errors that mean overload),
 * and `key` (the metric attribute, for standalone limiters).
 *
 * @since 0.1.0
 * @category models
 */
export interface LimiterOptions extends LimiterFields {
  readonly key?: string | undefined
}

/**
 * The options every limiter of a service shares with a standalone one.
 *
 * @since 0.2.0
 * @category models
 */
export interface LimiterFields {
  readonly algorithm?: LimitAlgorithm.Factory | undefined
  readonly maxQueue?: number | undefined
  readonly maxWait?: Duration.Input | undefined
  readonly order?: "fifo" | "lifo" | undefined
  readonly partitions?: { readonly [level in Criticality.Criticality]?: number | undefined } | undefined
  readonly isDrop?: ((error: unknown) => boolean) | undefined
}

/**
 * Options of the service: every limiter option (applied to each key) plus
 * `maxKeys` (default 1024): past it, the least recently used key is forgotten,
 * idle keys first.
 *
 * @since 0.1.0
 * @category models
 */
export interface ServiceOptions extends LimiterFields {
  readonly maxKeys?: number | undefined
}

/**
 * Why a call was refused without running (the `reason` attribute of the rejected metric).
 *
 * @since 0.1.0
 * @category models
 */
export type RejectReason =
  "limit" | "queue-full" | "queue-timeout" | "displaced" | "deadline" | "deadline-unmeetable"

/**
 * One limiter. `limit`, `inFlight` and `queued` are read synchronously, e.g.
 * by a simulation recording the limit over virtual time.
 *
 * @since 0.1.0
 * @category models
 */
export interface Limiter extends Pipeable {
  readonly [TypeId]: TypeId
  readonly key: string
  readonly algorithm: LimitAlgorithm.LimitAlgorithm
  /** The algorithm's current limit. */
  readonly limit: number
  /** Requests holding a permit. */
  readonly inFlight: number
  /** Requests waiting for a permit. */
  readonly queued: number
  /** Permits granted so far (the next permit id). */
  readonly nextId: number
  inFlightOf(level: Criticality.Criticality): number
  queuedOf(level: Criticality.Criticality): number
  /**
   * Waits for a permit, runs the effect, releases the permit and reports the outcome.
   *
   * @since 0.2.0
   */
  readonly withLimiter: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Overloaded, R>
  /**
   * The limiter's side of the admission protocol: a permit at once when nobody is
   * queued and in-flight is below the limit, a refusal when the queue is off
   * (`maxQueue: 0`), else the waiting path (the queue, bounded by `maxQueue` and
   * `maxWait`). A permit is settled with the outcome of the work: the algorithm
   * hears `success` and `dropped`; anything else is `ignored`.
   */
  readonly gate: Admission.Gate<Permit, Errors.Overloaded>
  /**
   * Refuses at once what {@link gate} would refuse at once for want of room (a full queue of
   * work served no later, or no queue), with no pass through the gates: counts the rejection
   * (metrics, events) and returns it; `undefined`, with nothing recorded, when the request
   * would take a permit or a place in the queue (it then enters through {@link gate}). A
   * server's refusal fast path (`Middleware.loadShed`).
   *
   * @since 1.1.0
   */
  readonly refuseUnsafe: (
    criticality: Criticality.Criticality,
    overQuota?: boolean
  ) => Errors.Overloaded | undefined
  /**
   * The expected time a permit granted now is held, in milliseconds: the smoothed round-trip
   * time of the work settled `success` (gain 1/8, as TCP's SRTT), sampled while the limiter
   * reads the clock at settlement (always with a time-aware algorithm; while work waits with a
   * time-blind one such as the congestion window). `undefined` until then.
   *
   * @since 1.0.0
   */
  readonly serviceTime: number | undefined
  /**
   * The waiting path of {@link gate} for work that must be done by `deadline` (epoch
   * milliseconds, the clock's): refused with `"deadline"` once it has passed and with
   * `"deadline-unmeetable"` once its time left is below {@link serviceTime} — at once, while
   * it waits (it leaves at the latest start the estimate allows) and when a permit frees up
   * for it (the permit goes to the next waiter). A cold limiter (no estimate) refuses only a
   * passed deadline. `Middleware.loadShed` waits here with the request's deadline.
   *
   * @since 1.0.0
   */
  readonly enterBy: (entry: Admission.Entry, deadline: number) => Effect.Effect<Permit, Errors.Overloaded>
  /**
   * Every refusal of this limiter, as it happens (off the success path only; a
   * subscriber that falls behind by more than 256 events loses the oldest).
   *
   * @since 0.2.0
   */
  readonly events: Stream.Stream<Event>
}

/**
 * What a limiter reports on its `events`: a call refused without running, with the
 * reason the `rejected` metric counts (`"queue-full"`, `"queue-timeout"`, `"limit"`
 * when the queue is off, `"displaced"` by more critical work, `"deadline"` and
 * `"deadline-unmeetable"` for a wait by a deadline, {@link Limiter.enterBy}).
 *
 * @since 0.2.0
 * @category models
 */
export type Event = {
  readonly _tag: "Rejected"
  readonly key: string
  readonly reason: RejectReason
}

/**
 * A permit granted by a limiter's {@link Limiter.gate}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Permit {
  readonly id: number
  /** Clock reading when granted. */
  readonly start: number
}

/**
 * The service: one limiter per key (e.g. per host), created on demand.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** How many keys currently have a limiter. */
  readonly size: number
  keys(): ReadonlyArray<string>
  get(key: string): Effect.Effect<Limiter>
  getUnsafe(key: string): Limiter
  /**
   * Runs `self` under the limiter of `key` (default `"default"`).
   *
   * @since 0.2.0
   */
  withLimiter<A, E, R>(self: Effect.Effect<A, E, R>, key?: string): Effect.Effect<A, E | Errors.Overloaded, R>
  /** The admission gate of the limiter of `key` (resolved per call, so eviction is safe). */
  gate(key: string): Admission.Gate<Permit, Errors.Overloaded>
  /**
   * The refusals of every key's limiter.
   *
   * @since 0.2.0
   */
  readonly events: Stream.Stream<Event>
}

/**
 * The service (a `Context.Service` key).
 *
 * @since 0.1.0
 * @category tags
 */
export class ConcurrencyLimiter extends Context.Service<ConcurrencyLimiter, Service>()(
  "@sluice/adaptive/ConcurrencyLimiter"
) {}

/**
 * Makes a standalone limiter, failing with `InvalidOptions` on bad options.
 *
 * @example
 * ```ts
 * import { AimdLimit, ConcurrencyLimiter } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const limiter = yield* ConcurrencyLimiter.make({ algorithm: AimdLimit.factory(), maxQueue: 100, maxWait: "1 second" })
 *   const result = yield* limiter.withLimiter(Effect.succeed(42))
 *   console.log(result, limiter.inFlight) // prints: 42 0
 * })
 * Effect.runPromise(program)
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options?: LimiterOptions) => Effect.Effect<Limiter, Options.InvalidOptions> =
  internal.make

/**
 * Makes a standalone limiter synchronously; throws `InvalidOptions`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe: (options?: LimiterOptions) => Limiter = internal.makeUnsafe

/**
 * Makes the per-key service, failing with `InvalidOptions` on bad options.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeService: (options?: ServiceOptions) => Effect.Effect<Service, Options.InvalidOptions> =
  internal.makeService

/**
 * The service as a Layer.
 *
 * @example
 * ```ts
 * import { ConcurrencyLimiter, CongestionWindow } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const call = Effect.succeed("ok").pipe(ConcurrencyLimiter.withLimiter("api.example.com"))
 * const program = call.pipe(
 *   Effect.provide(ConcurrencyLimiter.layer({ algorithm: CongestionWindow.factory({ variant: "tahoe" }) }))
 * )
 * Effect.runPromise(program).then(console.log) // prints: ok
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layer: (options?: ServiceOptions) => Layer.Layer<ConcurrencyLimiter, Options.InvalidOptions> =
  internal.layer

/**
 * Runs an effect under a limiter, data-first or data-last: the limiter of `key`
 * (default `"default"`) of the service in context, or a given standalone limiter.
 *
 * @example
 * ```ts
 * import { ConcurrencyLimiter } from "@sluice/adaptive"
 * import { Effect } from "effect"
 *
 * const limited = ConcurrencyLimiter.withLimiter(Effect.succeed(1), "db")
 * const same = Effect.succeed(1).pipe(ConcurrencyLimiter.withLimiter("db"))
 *
 * const limiter = ConcurrencyLimiter.makeUnsafe({ maxQueue: 0 })
 * const standalone = Effect.succeed(1).pipe(ConcurrencyLimiter.withLimiter(limiter))
 * Effect.runPromise(standalone).then(console.log) // prints: 1
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const withLimiter: {
  (limiter: Limiter): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.Overloaded, R>
  (
    key?: string
  ): <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | Errors.Overloaded, R | ConcurrencyLimiter>
  <A, E, R>(self: Effect.Effect<A, E, R>, limiter: Limiter): Effect.Effect<A, E | Errors.Overloaded, R>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    key?: string
  ): Effect.Effect<A, E | Errors.Overloaded, R | ConcurrencyLimiter>
} = internal.withLimiter as any

/**
 * How the limiter classifies an exit: success, dropped (`Overloaded`, a
 * `DontRetry` whose cause is `Overloaded`, a `Cause.TimeoutError`, or `isDrop`),
 * otherwise ignored (defects and interruption included).
 *
 * @example
 * ```ts
 * import { ConcurrencyLimiter } from "@sluice/adaptive"
 * import { Errors } from "@sluice/core"
 * import { Exit } from "effect"
 *
 * console.log(ConcurrencyLimiter.classify(Exit.fail(new Errors.Overloaded({ reason: "503" })))) // prints: dropped
 * ```
 * @since 0.1.0
 * @category utils
 */
export const classify: (
  exit: Exit.Exit<unknown, unknown>,
  isDrop?: (error: unknown) => boolean
) => LimitAlgorithm.Outcome = internal.classify

/**
 * {@link layer} with its options read from `Config` (e.g. environment variables): a
 * missing or malformed value fails the layer with `ConfigError`, a bad value with
 * `InvalidOptions` naming the field.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import { ConcurrencyLimiter } from "@sluice/adaptive"
 * import { Config } from "effect"
 *
 * const Live = ConcurrencyLimiter.layerConfig(Config.all({ maxQueue: Config.Int("LIMITER_MAX_QUEUE").pipe(Config.withDefault(100)) }))
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<ServiceOptions>
): Layer.Layer<ConcurrencyLimiter, Options.InvalidOptions | Config.ConfigError> =>
  Layer.unwrap(Effect.map(config, (options) => layer(options)))

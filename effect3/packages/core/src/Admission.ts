/**
 * The admission protocol: how every Sluice policy lets work in and learns how it
 * went, in the shape of Netflix concurrency-limits' `Limiter.acquire → Listener`.
 *
 * A policy is a {@link Gate}: the work tries to enter (`tryEnter`), and gets a ticket,
 * a typed refusal, or {@link Wait} (it must wait, e.g. in a limiter's queue: then
 * `enter` is the waiting path). When the work settles, every ticket is settled with
 * its {@link Outcome.Outcome}, computed once from the work's `Exit` by the one
 * classifier in `Outcome`. A gate never classifies failures itself.
 *
 * {@link guard} composes any gates around an effect in one step: one uninterruptible
 * region, one clock read, one handler; gates are entered in order
 * (outermost first) and settled in reverse. The adaptive throttle, the concurrency
 * limiter, the load shedder, the circuit breaker and the retry budget each expose
 * such a gate.
 *
 * @since 0.2.0
 */
import type * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import type * as DefaultServices from "effect/DefaultServices"
import type * as Effect from "effect/Effect"
import type * as FiberRef from "effect/FiberRef"
import type * as Criticality from "./Criticality.js"
import * as internal from "./internal/admission.js"
import type * as Outcome from "./Outcome.js"

/**
 * What a gate is told when work tries to enter: the clock reading (epoch ms), the
 * work's criticality (read from the fiber only when a gate asks), the fiber's
 * default services (`Clock`, `Random`, …) and its fiber refs.
 *
 * @since 0.2.0
 * @category models
 */
export interface Entry {
  readonly now: number
  readonly criticality: Criticality.Criticality
  readonly services: Context.Context<DefaultServices.DefaultServices>
  /** The value of a fiber ref on the fiber the work runs on. */
  readonly getFiberRef: <A>(ref: FiberRef.FiberRef<A>) => A
}

/**
 * The answer of `tryEnter` that sends the work down the gate's waiting path.
 *
 * @since 0.2.0
 * @category models
 */
export interface Wait {
  readonly _tag: "Wait"
}

/**
 * @since 0.2.0
 * @category constants
 */
export const Wait: Wait = internal.Wait

/**
 * A typed refusal returned by `tryEnter`.
 *
 * @since 0.2.0
 * @category models
 */
export interface Refused<E> {
  readonly _tag: "Refused"
  readonly error: E
}

/**
 * A policy's side of the protocol. `T` is its ticket, `E` its refusal.
 *
 * @since 0.2.0
 * @category models
 */
export interface Gate<T, E> {
  /** Decide now: a ticket, a refusal, or {@link Wait}. Runs inside an uninterruptible region. */
  readonly tryEnter: (entry: Entry) => T | Refused<E> | Wait
  /** The waiting path, taken after `tryEnter` answered {@link Wait}. Interruptible. */
  readonly enter: (entry: Entry) => Effect.Effect<T, E>
  /**
   * Called exactly once per ticket with the outcome of the work (`"refused"` when a later
   * gate refused it). When the work itself failed, `cause` is the `Cause` the outcome was
   * computed from: a gate never classifies it again, but a gate whose owner judges typed
   * errors by a predicate of their own (the circuit breaker's `isFailure`) reads the error
   * there. Absent for a success and for work refused or interrupted before it ran.
   */
  readonly settle: (ticket: T, outcome: Outcome.Outcome, cause?: Cause.Cause<unknown>) => void
  /** Extra errors this gate's owner declared as overload (see `Outcome.ClassifyOptions`). */
  readonly isDrop?: ((error: unknown) => boolean) | undefined
}

/**
 * The refusal type of a gate.
 *
 * @since 0.2.0
 * @category models
 */
export type RefusalOf<G> = G extends Gate<any, infer E> ? E : never

/**
 * Builds a refusal for `tryEnter` to return.
 *
 * @example
 * ```ts
 * import { Admission, Errors } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * // A gate that lets at most one call in at a time.
 * let busy = false
 * const single: Admission.Gate<true, Errors.Overloaded> = {
 *   tryEnter: () =>
 *     busy ? Admission.refuse(new Errors.Overloaded({ reason: "busy", origin: "local" })) : (busy = true),
 *   enter: () => Effect.succeed(true as const),
 *   settle: () => {
 *     busy = false
 *   }
 * }
 * const guarded = Effect.succeed("ok").pipe(Admission.guard([single]))
 * ```
 * @since 0.2.0
 * @category constructors
 */
export const refuse: <E>(error: E) => Refused<E> = internal.refuse

/**
 * Runs an effect through gates, outermost first, in one step; settles every ticket
 * with the effect's outcome (interruption of the caller is `"ignored"`).
 *
 * `orElse`, when given, handles a failure (a refusal or the effect's own error) as
 * `Effect.catchAll(orElse)` around the guard would, without a step of its own (it
 * is also given the guarded effect, so one guard serves every call): this
 * is how a retry policy continues after a failed first try (`Retry.Policy.around`).
 *
 * @example
 * ```ts
 * import { Admission } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const gates: ReadonlyArray<Admission.Gate<unknown, never>> = []
 * const program = Effect.succeed(1).pipe(Admission.guard(gates))
 * ```
 * @since 0.2.0
 * @category combinators
 */
export const guard: {
  <const Gates extends ReadonlyArray<Gate<any, any>>>(
    gates: Gates
  ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | RefusalOf<Gates[number]>, R>
  <const Gates extends ReadonlyArray<Gate<any, any>>, A2, E2, R2>(
    gates: Gates,
    orElse: (error: unknown, self: Effect.Effect<any, any, any>) => Effect.Effect<A2, E2, R2>
  ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A | A2, E2, R | R2>
} = internal.guard as any

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
 * {@link guard} composes any gates around an effect in one step: one exit handler (in
 * place before the first ticket is taken, so no interruption can separate a ticket from
 * its settlement), one clock read; gates are entered in order (outermost first) and
 * settled in reverse. The adaptive throttle, the concurrency
 * limiter, the load shedder, the circuit breaker and the retry budget each expose
 * such a gate.
 *
 * **Details**
 *
 * - A gate reads what it needs from the {@link Entry}, which reads it from the fiber the
 *   work runs on, each only when asked: `now` (one `Clock` read per pass), `criticality`
 *   (`Criticality.currentCriticality`), the fiber's `clock`, its `context`, and any
 *   `Context.Reference` through `getRef` (`entry.getRef(Random.Random)`), as
 *   `fiber.getRef` does.
 * - A work that fails is settled with its outcome and its `Cause`; one that was refused
 *   by a later gate is settled `"refused"`; one whose caller interrupted it `"ignored"`.
 *
 * **Gotchas**
 *
 * - `tryEnter` and `settle` run synchronously, where no interruption can fall (the pass's
 *   exit handler is in place before the first ticket is taken, and runs uninterruptibly):
 *   they must not block. Waiting belongs in `enter`, which `guard` runs uninterruptibly, so
 *   that a ticket it returns is held by the pass with no interruptible step in between. A
 *   gate that waits makes the wait itself interruptible (`Effect.interruptible`, whatever its
 *   caller's region: a caller that left must not keep a place in a queue), inside an exit
 *   handler that gives back a ticket granted as the wait was interrupted.
 * - A refusal must be made with {@link refuse}: `guard` tells it from a ticket by its
 *   class, so a ticket may be any value (even an object with a `_tag`).
 *
 * **Example** (A gate that sheds half of the sheddable work)
 *
 * ```ts
 * import { Admission, Criticality, Errors } from "@sluice/core"
 * import { Effect, Random } from "effect"
 *
 * const coin: Admission.Gate<true, Errors.Overloaded> = {
 *   tryEnter: (entry) =>
 *     entry.criticality === "SHEDDABLE" && entry.getRef(Random.Random).nextDoubleUnsafe() < 0.5
 *       ? Admission.refuse(new Errors.Overloaded({ reason: "shed", origin: "local" }))
 *       : true,
 *   enter: () => Effect.succeed(true as const),
 *   settle: () => {}
 * }
 * const background = Effect.succeed("done").pipe(
 *   Admission.guard([coin]),
 *   Criticality.withCriticality("SHEDDABLE")
 * )
 * ```
 *
 * @since 0.2.0
 */
import type * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Criticality from "./Criticality.js"
import * as internal from "./internal/admission.js"
import type * as Outcome from "./Outcome.js"

/**
 * What a gate is told when work tries to enter, read from the fiber the work runs on,
 * each only when a gate asks: the clock reading (epoch ms, one read per pass), the
 * work's criticality, the fiber's `Clock`, its context, and any `Context.Reference`
 * (`Random.Random`, a policy's own) through `getRef`.
 *
 * @since 0.2.0
 * @category models
 */
export interface Entry {
  readonly now: number
  readonly criticality: Criticality.Criticality
  /**
   * The fiber's `Clock` (`fiber.getRef(Clock.Clock)`): a gate keeps it in its ticket to
   * read the time when the work settles. The same value for every call on the same
   * clock, so a gate may reuse a ticket while it is unchanged.
   */
  readonly clock: Clock.Clock
  /** The context of the fiber the work runs on (`fiber.context`): its services and References. */
  readonly context: Context.Context<never>
  /** The value of a `Context.Reference` on the fiber the work runs on (`fiber.getRef(ref)`). */
  readonly getRef: <A>(ref: Context.Reference<A>) => A
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
  /** Decide now: a ticket, a refusal, or {@link Wait}. Runs synchronously: no interruption falls inside. */
  readonly tryEnter: (entry: Entry) => T | Refused<E> | Wait
  /**
   * The waiting path, taken after `tryEnter` answered {@link Wait}. Run uninterruptibly:
   * a gate makes its wait interruptible itself, and gives back a ticket granted as the wait
   * was interrupted (see the module's Gotchas).
   */
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
 * Effect.runPromise(guarded).then(console.log) // prints: ok
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
 * `Effect.catch(orElse)` around the guard would (it is also given the guarded effect,
 * so one guard serves every call): this is how a retry policy continues after a failed
 * first try (`Retry.Policy.around`).
 *
 * `admit`, when given, is what runs once every gate has admitted the work: it is given
 * the effect and the pass's {@link Entry}, and returns the effect to run in its place
 * (default: the effect itself). It is decided in the same step as the admission, from
 * what the entry reads: this is how a retry policy nested in another one runs its first
 * try at attempt 0 again.
 *
 * @example
 * ```ts
 * import { Admission } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const gates: ReadonlyArray<Admission.Gate<unknown, never>> = []
 * const program = Effect.succeed(1).pipe(Admission.guard(gates))
 * Effect.runPromise(program).then(console.log) // prints: 1
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
    orElse: (error: unknown, self: Effect.Effect<any, any, any>) => Effect.Effect<A2, E2, R2>,
    admit?: Admit
  ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A | A2, E2, R | R2>
} = internal.guard as any

/**
 * What runs once every gate has admitted the work (see {@link guard}): the effect itself,
 * or one that runs it (with the same result).
 *
 * @since 0.2.0
 * @category models
 */
export type Admit = <A, E, R>(self: Effect.Effect<A, E, R>, entry: Entry) => Effect.Effect<A, E, R>

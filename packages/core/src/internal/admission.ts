import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Result from "effect/Result"
import type * as A from "../Admission.js"
import type * as Criticality from "../Criticality.js"
import * as criticality from "./criticality.js"
import * as outcome from "./outcome.js"
import * as Outcome from "@sluice/kernel/outcome/Outcome"

/** @internal */
export const Wait: A.Wait = { _tag: "Wait" }

class RefusedImpl<E> implements A.Refused<E> {
  readonly _tag = "Refused"
  constructor(readonly error: E) {}
}

/** @internal */
export const refuse = <E>(error: E): A.Refused<E> => new RefusedImpl(error)

/** @internal */
export const isRefused = (u: unknown): u is A.Refused<unknown> => u instanceof RefusedImpl

type AnyGate = A.Gate<unknown, unknown>
type Restore = <X, Y, R>(effect: Effect.Effect<X, Y, R>) => Effect.Effect<X, Y, R>

const classifyOptions = (gates: ReadonlyArray<AnyGate>): Outcome.ClassifyOptions | undefined =>
  Outcome.anyDrop(gates.flatMap((gate) => (gate.isDrop === undefined ? [] : [gate.isDrop])))

/** A fiber's `Clock`, read once per pass and only when a gate asks. */
const clockOf = (fiber: Fiber.Fiber<unknown, unknown>): Clock.Clock => fiber.getRef(Clock.Clock)

/**
 * One pass of work through the gates. It is the gates' `Entry` too, and holds the
 * tickets: one object per call, plus the two handlers the work's `Exit` needs.
 */
class Pass implements A.Entry {
  readonly tickets: Array<unknown>
  constructor(
    readonly gates: ReadonlyArray<AnyGate>,
    readonly options: Outcome.ClassifyOptions | undefined,
    readonly orElse: OrElse | undefined,
    readonly restore: Restore,
    readonly self: Effect.Effect<unknown, unknown, unknown>,
    readonly fiber: Fiber.Fiber<unknown, unknown>
  ) {
    this.tickets = new Array(gates.length)
  }

  private fiberClock: Clock.Clock | undefined = undefined

  get clock(): Clock.Clock {
    return (this.fiberClock ??= clockOf(this.fiber))
  }

  private time = -1

  /** One clock read per pass, and none when no gate asks (a time-blind limiter alone). */
  get now(): number {
    if (this.time < 0) this.time = this.clock.currentTimeMillisUnsafe()
    return this.time
  }

  private level: Criticality.Criticality | undefined = undefined

  /** Read once, and only when a gate asks (most success paths never do). */
  get criticality(): Criticality.Criticality {
    return (this.level ??= this.fiber.getRef(criticality.currentCriticality))
  }

  get context(): Context.Context<never> {
    return this.fiber.context
  }

  readonly getRef = <A>(ref: Context.Reference<A>): A => this.fiber.getRef(ref)

  /** Settles the first `count` tickets, innermost first. */
  settle(count: number, result: Outcome.Outcome, cause?: Cause.Cause<unknown>): void {
    for (let i = count - 1; i >= 0; i--) this.gates[i]!.settle(this.tickets[i], result, cause)
  }

  enterFrom(start: number): Effect.Effect<unknown, unknown, unknown> {
    const gates = this.gates
    for (let i = start; i < gates.length; i++) {
      const result = gates[i]!.tryEnter(this)
      if (result === Wait) return this.wait(i)
      if (isRefused(result)) {
        this.settle(i, "refused")
        return this.orElse === undefined
          ? Effect.fail(result.error)
          : this.restore(this.orElse(result.error, this.self))
      }
      this.tickets[i] = result
    }
    // The pass is its own handler object: no options object per call.
    return Effect.matchCauseEffect(this.restore(this.self), this)
  }

  readonly onSuccess = (value: unknown): Effect.Effect<unknown> => {
    this.settle(this.gates.length, "success")
    return Effect.succeed(value)
  }

  readonly onFailure = (cause: Cause.Cause<unknown>): Effect.Effect<unknown, unknown, unknown> => {
    this.settle(this.gates.length, outcome.ofCause(cause, this.options), cause)
    return this.recover(cause)
  }

  /** As `Effect.catch(orElse)` after the guard, without a step of its own. */
  recover(cause: Cause.Cause<unknown>): Effect.Effect<unknown, unknown, unknown> {
    if (this.orElse === undefined) return Effect.failCause(cause)
    const failure = Cause.findError(cause)
    return Result.isSuccess(failure)
      ? this.restore(this.orElse(failure.success, this.self))
      : Effect.failCause(cause)
  }

  wait(i: number): Effect.Effect<unknown, unknown, unknown> {
    return Effect.matchCauseEffect(this.restore(this.gates[i]!.enter(this)), {
      onSuccess: (ticket) => {
        this.tickets[i] = ticket
        return this.enterFrom(i + 1)
      },
      onFailure: (cause) => {
        // Refused while waiting, or the caller gave up: the outer gates learn nothing.
        this.settle(i, outcome.ofCause(cause) === "ignored" ? "ignored" : "refused")
        return this.recover(cause)
      }
    })
  }
}

type OrElse = (
  error: unknown,
  self: Effect.Effect<unknown, unknown, unknown>
) => Effect.Effect<unknown, unknown, unknown>

/** @internal */
export const guard = (
  gates: ReadonlyArray<AnyGate>,
  orElse?: OrElse
): (<X, Y, R>(self: Effect.Effect<X, Y, R>) => Effect.Effect<X, unknown, R>) => {
  const options = classifyOptions(gates)
  const enter = (
    fiber: Fiber.Fiber<unknown, unknown>,
    restore: Restore,
    self: Effect.Effect<unknown, unknown, unknown>
  ): Effect.Effect<unknown, unknown, unknown> =>
    new Pass(gates, options, orElse, restore, self, fiber).enterFrom(0)
  const guarded = (
    self: Effect.Effect<unknown, unknown, unknown>
  ): Effect.Effect<unknown, unknown, unknown> =>
    // The tickets are taken inside the uninterruptible region, so no interruption can fall
    // between being admitted and installing the handler that settles the ticket.
    Effect.uninterruptibleMask((restore) => {
      // The mask's body runs on the fiber that is running it: reading it here saves a
      // `withFiber` step on every call.
      const current = Fiber.getCurrent()
      return current !== undefined
        ? enter(current, restore, self)
        : Effect.withFiber((fiber) => enter(fiber, restore, self))
    })
  return guarded as any
}

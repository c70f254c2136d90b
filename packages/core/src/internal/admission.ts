import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Result from "effect/Result"
import type * as A from "../Admission.js"
import type * as Criticality from "../Criticality.js"
import * as criticality from "../Criticality.js"
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
type AnyEffect = Effect.Effect<unknown, unknown, unknown>

type OrElse = (error: unknown, self: AnyEffect) => AnyEffect
type Admit = (self: AnyEffect, entry: A.Entry) => AnyEffect

const classifyOptions = (gates: ReadonlyArray<AnyGate>): Outcome.ClassifyOptions | undefined =>
  Outcome.anyDrop(gates.flatMap((gate) => (gate.isDrop === undefined ? [] : [gate.isDrop])))

/**
 * What every pass through one guard shares: worked out once when the guard is made, and
 * what the latest pass read from its fiber's context. A context is immutable, so a pass
 * whose fiber runs with the same context (the same object) reads the same clock and
 * criticality from it: it takes them from here rather than looking them up again.
 */
class Shared {
  readonly options: Outcome.ClassifyOptions | undefined
  constructor(
    readonly gates: ReadonlyArray<AnyGate>,
    readonly orElse: OrElse | undefined,
    readonly admit: Admit | undefined
  ) {
    this.options = classifyOptions(gates)
  }
  private context: Context.Context<never> | undefined = undefined
  private contextClock: Clock.Clock | undefined = undefined
  private contextLevel: Criticality.Criticality | undefined = undefined
  private read(context: Context.Context<never>): void {
    if (context !== this.context) {
      this.context = context
      this.contextClock = undefined
      this.contextLevel = undefined
    }
  }
  clockOf(context: Context.Context<never>): Clock.Clock {
    this.read(context)
    return (this.contextClock ??= Context.get(context, Clock.Clock))
  }
  levelOf(context: Context.Context<never>): Criticality.Criticality {
    this.read(context)
    return (this.contextLevel ??= Context.get(context, criticality.currentCriticality))
  }
}

/**
 * One pass of work through the gates: the gates' `Entry`, and the holder of the tickets
 * taken so far. `settleOnExit` is installed (as `Effect.onExitPrimitive`, whose handler runs
 * uninterruptibly) before the first ticket is taken, and every ticket is taken synchronously
 * in `enter` or stored as its waiting path succeeds: whatever ends the pass (the work's exit,
 * a refusal, a failed wait, the caller's interruption at any point), the handler settles
 * exactly the tickets taken, once.
 */
class Pass implements A.Entry {
  readonly tickets: Array<unknown>
  /** The fiber the work runs on, set when the pass starts (`enter`). */
  private fiber: Fiber.Fiber<unknown, unknown> = undefined as never
  /** Tickets taken and not yet settled: `tickets[0 .. held)`. */
  private held = 0
  /** Past every gate: the work itself is running. */
  private running = false

  constructor(
    private readonly shared: Shared,
    private readonly self: AnyEffect
  ) {
    this.tickets = new Array(shared.gates.length)
  }

  private fiberClock: Clock.Clock | undefined = undefined

  /** The fiber's `Clock` (`fiber.getRef(Clock.Clock)`), read once per pass and only when a gate asks. */
  get clock(): Clock.Clock {
    return (this.fiberClock ??= this.shared.clockOf(this.fiber.context))
  }

  private time = -1

  /** One clock read per pass, and none when no gate asks (a time-blind limiter alone). */
  get now(): number {
    if (this.time < 0) this.time = this.clock.currentTimeMillisUnsafe()
    return this.time
  }

  private level: Criticality.Criticality | undefined = undefined

  /** Read once per pass, and only when a gate asks. */
  get criticality(): Criticality.Criticality {
    return (this.level ??= this.shared.levelOf(this.fiber.context))
  }

  get context(): Context.Context<never> {
    return this.fiber.context
  }

  private boundGetRef: (<X>(ref: Context.Reference<X>) => X) | undefined = undefined

  /** Bound to the pass, so it works unbound; made only when a gate asks. */
  get getRef(): <X>(ref: Context.Reference<X>) => X {
    return (this.boundGetRef ??= (ref) => this.fiber.getRef(ref))
  }

  /** Runs on the work's fiber, inside the exit handler: takes the tickets, then runs the work. */
  readonly enter = (fiber: Fiber.Fiber<unknown, unknown>): AnyEffect => {
    this.fiber = fiber
    return this.enterFrom(0)
  }

  private enterFrom(start: number): AnyEffect {
    const gates = this.shared.gates
    for (let i = start; i < gates.length; i++) {
      const result = gates[i]!.tryEnter(this)
      if (result === Wait) return this.wait(i)
      if (isRefused(result)) {
        this.release("refused")
        return Effect.fail(result.error)
      }
      this.tickets[i] = result
      this.held = i + 1
    }
    this.running = true
    const admit = this.shared.admit
    return admit === undefined ? this.self : admit(this.self, this)
  }

  /**
   * The waiting path of gate `i`, run uninterruptibly: a ticket that comes out of `enter`
   * is held before any interruption can fall, so none is lost between the gate and the
   * pass. A gate makes its own wait interruptible, with an exit handler outside the wait
   * that gives back a ticket granted as the wait was interrupted (`Gate.enter`).
   */
  private wait(i: number): AnyEffect {
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(this.shared.gates[i]!.enter(this), (ticket) => {
        this.tickets[i] = ticket
        this.held = i + 1
        return restore(this.enterFrom(i + 1))
      })
    )
  }

  /** Settles the tickets held, innermost first, with one outcome. */
  private release(result: Outcome.Outcome, cause?: Cause.Cause<unknown>): void {
    const gates = this.shared.gates
    const held = this.held
    this.held = 0
    for (let i = held - 1; i >= 0; i--) gates[i]!.settle(this.tickets[i], result, cause)
  }

  /** The exit handler: the work's outcome, or, before the work ran, refused or abandoned. */
  readonly settleOnExit = (exit: Exit.Exit<unknown, unknown>): undefined => {
    if (this.held === 0) return undefined
    if (exit._tag === "Success") this.release("success")
    else if (this.running) this.release(outcome.ofCause(exit.cause, this.shared.options), exit.cause)
    // Refused while waiting, or the caller gave up: the outer gates learn nothing.
    else this.release(outcome.ofCause(exit.cause) === "ignored" ? "ignored" : "refused")
    return undefined
  }
}

/** As `Effect.catch(orElse)` after the guard: a typed failure of `self` goes to `orElse`. */
const recover = (orElse: OrElse, self: AnyEffect, cause: Cause.Cause<unknown>): AnyEffect => {
  const failure = Cause.findError(cause)
  return Result.isSuccess(failure) ? orElse(failure.success, self) : Effect.failCause(cause)
}

/** @internal */
export const guard = (
  gates: ReadonlyArray<AnyGate>,
  orElse?: OrElse,
  admit?: Admit
): (<X, Y, R>(self: Effect.Effect<X, Y, R>) => Effect.Effect<X, unknown, R>) => {
  const shared = new Shared(gates, orElse, admit)
  // A pass per run (an effect may be run many times), made when the run starts. Its exit
  // handler is in place before `enter` takes the first ticket, so no interruption can fall
  // between being admitted and the ticket's settlement being guaranteed, and the work needs
  // no uninterruptible region around it (the handler itself runs uninterruptibly).
  const start = (self: AnyEffect): AnyEffect => {
    const pass = new Pass(shared, self)
    return Effect.onExitPrimitive(Effect.withFiber(pass.enter), pass.settleOnExit)
  }
  const guarded =
    orElse === undefined
      ? (self: AnyEffect): AnyEffect => Effect.suspend(() => start(self))
      : (self: AnyEffect): AnyEffect =>
          Effect.catchCause(
            Effect.suspend(() => start(self)),
            (cause) => recover(orElse, self, cause)
          )
  return guarded as any
}

import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as A from "../Admission.js"
import * as criticality from "./criticality.js"
import * as outcome from "./outcome.js"

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

const classifyOptions = (gates: ReadonlyArray<AnyGate>): outcome.ClassifyOptions | undefined => {
  const predicates = gates.flatMap((gate) => (gate.isDrop === undefined ? [] : [gate.isDrop]))
  if (predicates.length === 0) return undefined
  if (predicates.length === 1) return { isDrop: predicates[0]! }
  return { isDrop: (error) => predicates.some((isDrop) => isDrop(error)) }
}

/** Settles the first `count` tickets, innermost first. */
const settleAll = (
  gates: ReadonlyArray<AnyGate>,
  tickets: Array<unknown>,
  count: number,
  result: outcome.Outcome
): void => {
  for (let i = count - 1; i >= 0; i--) gates[i]!.settle(tickets[i], result)
}

/** @internal */
export const guard = (
  gates: ReadonlyArray<AnyGate>
): (<X, Y, R>(self: Effect.Effect<X, Y, R>) => Effect.Effect<X, unknown, R>) => {
  const options = classifyOptions(gates)
  const n = gates.length
  return <X, Y, R>(self: Effect.Effect<X, Y, R>): Effect.Effect<X, unknown, R> =>
    // The tickets are taken inside the uninterruptible region, so no interruption can fall
    // between being admitted and installing the handler that settles the ticket.
    Effect.uninterruptibleMask((restore) =>
      Effect.withFiberRuntime<X, unknown, R>((fiber) => {
        const entry: A.Entry = {
          now: Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis(),
          criticality: fiber.getFiberRef(criticality.currentCriticality),
          services: fiber.currentDefaultServices
        }
        const tickets = new Array<unknown>(n)
        const enterFrom = (start: number): Effect.Effect<X, unknown, R> => {
          for (let i = start; i < n; i++) {
            const result = gates[i]!.tryEnter(entry)
            if (result === Wait) return wait(i)
            if (isRefused(result)) {
              settleAll(gates, tickets, i, "refused")
              return Effect.fail(result.error)
            }
            tickets[i] = result
          }
          return Effect.matchCauseEffect(restore(self), {
            onSuccess: (value) => {
              settleAll(gates, tickets, n, "success")
              return Effect.succeed(value)
            },
            onFailure: (cause) => {
              settleAll(gates, tickets, n, outcome.ofCause(cause, options))
              return Effect.failCause(cause)
            }
          })
        }
        const wait = (i: number): Effect.Effect<X, unknown, R> =>
          Effect.matchCauseEffect(restore(gates[i]!.enter(entry)), {
            onSuccess: (ticket) => {
              tickets[i] = ticket
              return enterFrom(i + 1)
            },
            onFailure: (cause) => {
              // Refused while waiting, or the caller gave up: the outer gates learn nothing.
              settleAll(gates, tickets, i, outcome.ofCause(cause) === "ignored" ? "ignored" : "refused")
              return Effect.failCause(cause)
            }
          })
        return enterFrom(0)
      })
    )
}

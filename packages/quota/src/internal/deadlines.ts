import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Latch from "effect/Latch"
import type * as Scope from "effect/Scope"
import * as Deadlines from "@sluice/kernel/quota/Deadlines"

/** @internal */
export type Entry = Deadlines.Entry

/** @internal */
export type DeadlineQueue = Deadlines.DeadlineQueue

/**
 * One turn of the event loop's I/O: a `setImmediate` callback runs after the poll phase, so
 * answers already in the socket have been read (and their calls settled) when it resumes. Not
 * a timer and not time (`Clock.sleep(0)` only yields to other fibers): the decision after it
 * reads the Clock again.
 */
const ioTurn: Effect.Effect<void> = Effect.callback<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * The Clock's monotonic time in fractional milliseconds: deadlines and latencies are elapsed
 * time, which a wall clock corrected meanwhile would skew. One read of its nanoseconds, no
 * BigInt arithmetic (a double resolves nanoseconds for over a hundred days of uptime).
 *
 * @internal
 */
export const monotonicMillis = (clock: Clock.Clock): number => Number(clock.monotonicTimeNanosUnsafe()) / 1e6

/**
 * The kernel's deadline queue driven by Effect's `Clock`: one fiber sleeps (through
 * `Clock.sleep`, so `TestClock` drives it) until the oldest outstanding deadline, on the Clock's
 * monotonic time, lets the queue expire what is due, and sleeps again; when nothing is in flight
 * it waits on a latch, which a call registered on the idle queue opens.
 *
 * @internal
 */
export const make = (
  clock: Clock.Clock,
  timeoutMs: number,
  options: { readonly ordered: boolean; readonly maxTimeoutMs: number }
): Effect.Effect<DeadlineQueue, never, Scope.Scope> =>
  Effect.gen(function* () {
    const latch = yield* Latch.make(false)
    const queue = new Deadlines.DeadlineQueue({
      timeoutMs,
      maxTimeoutMs: options.maxTimeoutMs,
      ordered: options.ordered,
      onBusy: () => latch.openUnsafe()
    })
    const step = (): Effect.Effect<void> => {
      const next = queue.step(monotonicMillis(clock))
      switch (next._tag) {
        case "IoTurn":
          return ioTurn
        case "Idle":
          latch.closeUnsafe()
          return Effect.void
        case "Sleep":
          return clock.sleep(Duration.millis(next.ms))
      }
    }
    // every turn waits (on the latch, a timer or the I/O turn): the extra yield `forever` adds
    // between turns would only delay a wake
    yield* Effect.forkScoped(
      Effect.forever(Effect.andThen(latch.await, Effect.suspend(step)), { disableYield: true })
    )
    return queue
  })

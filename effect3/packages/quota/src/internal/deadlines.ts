import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Clock from "effect/Clock"
import type * as Scope from "effect/Scope"
import * as Deadlines from "@sluice/kernel/quota/Deadlines"

/** @internal */
export type Entry = Deadlines.Entry

/** @internal */
export type DeadlineQueue = Deadlines.DeadlineQueue

/**
 * One turn of the event loop's I/O: a `setImmediate` callback runs after the poll phase, so
 * answers already in the socket have been read (and their calls settled) when it resumes. Not
 * a timer and not time (`Clock.sleep(0)` is a 1 ms timer in Node): the decision after it reads
 * the Clock again.
 */
const ioTurn: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * The Clock's time in fractional milliseconds: one read of its nanoseconds, no BigInt
 * arithmetic (a double resolves a quarter of a microsecond at today's epoch).
 *
 * @internal
 */
export const clockMillis = (clock: Clock.Clock): number => Number(clock.unsafeCurrentTimeNanos()) / 1e6

/**
 * The kernel's deadline queue driven by Effect's `Clock`: one fiber sleeps (through
 * `Clock.sleep`, so `TestClock` drives it) until the oldest outstanding deadline, on the Clock's
 * nanosecond time, lets the queue expire what is due, and sleeps again; when nothing is in flight
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
    const latch = yield* Effect.makeLatch(false)
    const queue = new Deadlines.DeadlineQueue({
      timeoutMs,
      maxTimeoutMs: options.maxTimeoutMs,
      ordered: options.ordered,
      onBusy: () => latch.unsafeOpen()
    })
    const step = (): Effect.Effect<void> => {
      const next = queue.step(clockMillis(clock))
      switch (next._tag) {
        case "IoTurn":
          return ioTurn
        case "Idle":
          latch.unsafeClose()
          return Effect.void
        case "Sleep":
          return clock.sleep(Duration.millis(next.ms))
      }
    }
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(latch.await, Effect.suspend(step))))
    return queue
  })

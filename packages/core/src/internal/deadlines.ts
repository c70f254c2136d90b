import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Clock from "effect/Clock"
import type * as Scope from "effect/Scope"

/** A registered call: a node of the queue's doubly linked list. @internal */
export interface Entry {
  /** milliseconds (fractional, from the Clock's nanoseconds) */
  readonly expiresAt: number
  settled: boolean
  /**
   * Dropped when settled, so nothing is retained by a settled call. `stalled`: the deadline
   * fired late because this process did not run (a CPU stall, a long synchronous task), so the
   * store cannot be blamed for the missed deadline.
   */
  onExpire: ((stalled: boolean) => void) | undefined
  prev: Entry | undefined
  next: Entry | undefined
}

/**
 * The fiber wakes this much before the oldest deadline and expires it then: Node's
 * timers count whole milliseconds from the start of the event-loop turn, so a timer
 * for the exact remainder fires up to a millisecond late, and a second sleep for
 * what is left would cost another; the failure mode's decision then still has to
 * run (measured at 0.2 to 1 ms on these shared machines after the process sat idle
 * for the whole deadline). A deadline thus fires at most this much early instead
 * of a timer tick and a decision late: the deadline bounds the whole check.
 */
const SLACK_MS = 1

/**
 * A deadline timer that fires more than this late means the process itself was not running.
 * Then replies may already sit in the socket, unread: the queue first lets the event loop read
 * them (one `Clock.sleep(0)`: a timer turn, after the I/O poll), and what is still unsettled
 * after that expires as `stalled`.
 */
const STALL_MS = 3

/**
 * The Clock's time in fractional milliseconds: one read of its nanoseconds, no BigInt
 * arithmetic (a double resolves a quarter of a microsecond at today's epoch).
 *
 * @internal
 */
export const clockMillis = (clock: Clock.Clock): number => Number(clock.unsafeCurrentTimeNanos()) / 1e6

/**
 * Deadlines for many concurrent calls with the same timeout, driven by Effect's
 * `Clock`, without a timer or a fiber per call.
 *
 * `Effect.timeout` races two fibers and arms a timer for every call — tens of
 * microseconds each, more than a Redis round trip on loopback. Because every call
 * gets the same timeout, deadlines expire in arrival order: outstanding calls sit
 * in a linked list (a call that settles unlinks itself, so the list holds only
 * calls in flight however long the timeout), and one fiber sleeps (through
 * `Clock.sleep`, so `TestClock` drives it) until the oldest outstanding deadline,
 * measured on the Clock's nanosecond time, expires what is due, and sleeps again;
 * when nothing is in flight it waits on a latch. A call registers with one
 * allocation and settles with an unlink.
 *
 * @internal
 */
export class DeadlineQueue {
  private head: Entry | undefined = undefined
  private tail: Entry | undefined = undefined
  private idle = true
  /** the time the fiber meant to wake at (-1: woke from the latch) */
  private wakeAt = -1
  /** after a late wake: the I/O turn was given, expire now (as stalled) */
  private graced = false

  private constructor(
    private readonly clock: Clock.Clock,
    readonly timeoutMs: number,
    private readonly latch: Effect.Latch
  ) {}

  static make(
    clock: Clock.Clock,
    timeout: Duration.Duration
  ): Effect.Effect<DeadlineQueue, never, Scope.Scope> {
    return Effect.gen(function* () {
      const latch = yield* Effect.makeLatch(false)
      const queue = new DeadlineQueue(clock, Duration.toMillis(timeout), latch)
      yield* Effect.forkScoped(
        Effect.forever(
          Effect.zipRight(
            latch.await,
            Effect.suspend(() => queue.step())
          )
        )
      )
      return queue
    })
  }

  /** The Clock's time in fractional milliseconds. */
  nowMs(): number {
    return clockMillis(this.clock)
  }

  /**
   * Registers a call that started at `startMs` (see `nowMs`); `onExpire` runs if
   * `settle` was not called before its deadline.
   */
  register(startMs: number, onExpire: (stalled: boolean) => void): Entry {
    const entry: Entry = {
      expiresAt: startMs + this.timeoutMs,
      settled: false,
      onExpire,
      prev: this.tail,
      next: undefined
    }
    if (this.tail === undefined) this.head = entry
    else this.tail.next = entry
    this.tail = entry
    if (this.idle) {
      this.idle = false
      this.latch.unsafeOpen()
    }
    return entry
  }

  /** Marks an entry settled and unlinks it; true if it was not settled yet. */
  settle(entry: Entry): boolean {
    if (entry.settled) return false
    entry.settled = true
    entry.onExpire = undefined
    const { prev, next } = entry
    if (prev === undefined) this.head = next
    else prev.next = next
    if (next === undefined) this.tail = prev
    else next.prev = prev
    entry.prev = entry.next = undefined
    return true
  }

  private step(): Effect.Effect<void> {
    const now = this.nowMs()
    let head = this.head
    if (head !== undefined && head.expiresAt - now <= SLACK_MS) {
      const late = this.wakeAt >= 0 && now - this.wakeAt > STALL_MS
      if (late && !this.graced) {
        // the process was not running: let the event loop read replies already received
        this.graced = true
        this.wakeAt = -1
        return this.clock.sleep(Duration.zero)
      }
      const stalled = late || this.graced
      this.graced = false
      while (head !== undefined && head.expiresAt - now <= SLACK_MS) {
        const onExpire = head.onExpire!
        this.settle(head)
        onExpire(stalled)
        head = this.head
      }
    }
    this.graced = false
    if (head === undefined) {
      this.idle = true
      this.wakeAt = -1
      this.latch.unsafeClose()
      return Effect.void
    }
    this.wakeAt = head.expiresAt - SLACK_MS
    return this.clock.sleep(Duration.millis(head.expiresAt - now - SLACK_MS))
  }
}

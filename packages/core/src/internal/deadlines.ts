import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Clock from "effect/Clock"
import type * as Scope from "effect/Scope"

/** @internal */
export interface Entry {
  readonly expiresAt: number
  settled: boolean
  /** dropped when settled, so a settled entry waiting for its turn holds no closure */
  onExpire: (() => void) | undefined
}

/** Marks an entry settled; true if it was not settled yet. @internal */
export const settle = (entry: Entry): boolean => {
  if (entry.settled) return false
  entry.settled = true
  entry.onExpire = undefined
  return true
}

/**
 * Deadlines for many concurrent calls with the same timeout, driven by Effect's
 * `Clock`, without a timer or a fiber per call.
 *
 * `Effect.timeout` races two fibers and arms a timer for every call — tens of
 * microseconds each, more than a Redis round trip on loopback. Because every call
 * gets the same timeout, deadlines expire in arrival order: one fiber sleeps
 * (through `Clock.sleep`, so `TestClock` drives it) until the oldest unsettled
 * deadline, expires what is due, and sleeps again; when nothing is in flight it
 * waits on a latch. A call registers with one array push.
 *
 * @internal
 */
export class DeadlineQueue {
  private entries: Array<Entry> = []
  private head = 0
  private idle = true

  private constructor(
    private readonly clock: Clock.Clock,
    private readonly timeoutMs: number,
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

  /** Registers a call; `onExpire` runs if `settle` was not called before the deadline. */
  register(onExpire: () => void): Entry {
    const entry: Entry = {
      expiresAt: this.clock.unsafeCurrentTimeMillis() + this.timeoutMs,
      settled: false,
      onExpire
    }
    this.entries.push(entry)
    if (this.idle) {
      this.idle = false
      this.latch.unsafeOpen()
    }
    return entry
  }

  private step(): Effect.Effect<void> {
    const now = this.clock.unsafeCurrentTimeMillis()
    const entries = this.entries
    let head = this.head
    while (head < entries.length) {
      const entry = entries[head]!
      if (!entry.settled) {
        if (entry.expiresAt > now) break
        const onExpire = entry.onExpire!
        settle(entry)
        onExpire()
      }
      head++
    }
    if (head === entries.length) {
      this.entries = []
      this.head = 0
      this.idle = true
      this.latch.unsafeClose()
      return Effect.void
    }
    if (head > 1024 && head * 2 > entries.length) {
      this.entries = entries.slice(head)
      head = 0
    }
    this.head = head
    return this.clock.sleep(Duration.millis(Math.max(0, this.entries[head]!.expiresAt - now)))
  }
}

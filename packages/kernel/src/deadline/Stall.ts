/**
 * Whose fault a missed deadline is. A deadline timer that fires late means this process did not
 * run meanwhile (a GC pause, a starved container, a long synchronous task): the remote side may
 * have answered in time, its answer unread in the socket. Such a miss is not evidence of an
 * overloaded backend or store, so no policy may learn from it as a drop.
 *
 * The time a process was not running is measured from the later of the time the timer was due
 * and the last time the process was seen running (it read an answer): a busy event loop that
 * keeps reading answers fires its timers a little late without having stalled.
 *
 * The quota store's deadline queue and the HTTP client's attempt and call timers decide with
 * this one rule; the client then gives the event loop one I/O turn (an answer read then is an
 * answer in time) and holds a miss still left against itself only for a stall at least as long
 * as the timeout ({@link isOwnMiss}).
 *
 * @since 0.2.0
 */

/**
 * A timer that fires more than this late (milliseconds) means the process itself was not
 * running: Node's timers fire up to a millisecond late by their granularity, and on a shared VM
 * a few milliseconds now and then.
 *
 * @since 0.2.0
 */
export const STALL_MS = 3

/**
 * How long the process did not run before `now`, as seen by a timer due at `dueAt`: the time
 * since the later of `dueAt` and `ranAt`, the last time it was seen running (`-Infinity`:
 * never); never negative.
 *
 * @since 0.2.0
 */
export const stalledFor = (now: number, dueAt: number, ranAt: number): number => {
  const since = ranAt > dueAt ? ranAt : dueAt
  return now > since ? now - since : 0
}

/**
 * Whether a timer that finds the process not running for `stalledMs` (see {@link stalledFor})
 * fired late because the process stalled: more than {@link STALL_MS}.
 *
 * @since 0.2.0
 */
export const isStall = (stalledMs: number): boolean => stalledMs > STALL_MS

/**
 * Whether a miss of a `timeoutMs` deadline, with no answer even once the process ran again,
 * whose timer found the process not running for `stalledMs` is the process's own rather than
 * the remote side's: a stall ({@link isStall}) at least as long as the timeout. A stall shorter
 * than the timeout left the remote side part of it, and an answer that then did not come even
 * with the stall's time added says more about the remote side than about this process (on a
 * host loaded enough, timers run tens of ms late, and a backend that hangs must still be
 * learnt); a stall as long as the timeout may have kept the request itself from leaving (a
 * connection to open, a write to flush).
 *
 * @since 0.2.0
 */
export const isOwnMiss = (stalledMs: number, timeoutMs: number): boolean =>
  isStall(stalledMs) && stalledMs >= timeoutMs

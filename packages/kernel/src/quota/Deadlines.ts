/**
 * Deadlines for many concurrent calls with the same timeout, as a plain state machine: the
 * binding registers each call, reports answers (`progress`) and settlements (`settle`), and at
 * each wake asks {@link DeadlineQueue.step} what to do next: expire what is due (the queue calls
 * the expired calls' `onExpire`), give the event loop one I/O turn first, sleep a number of
 * milliseconds, or wait for the next call. Time is the caller's `now` (milliseconds, fractional).
 *
 * Because every call gets the same timeout, deadlines expire in arrival order: outstanding calls
 * sit in a linked list (a call that settles unlinks itself, so the list holds only calls in
 * flight however long the timeout), and one timer (the binding's) sleeps until the oldest
 * outstanding deadline. A call registers with one allocation and settles with an unlink:
 * `Effect.timeout` raced two fibers and armed a timer per call, tens of microseconds each, more
 * than a Redis round trip on loopback.
 *
 * `maxTimeoutMs` (default: the timeout) bounds every call: it expires by `start + maxTimeoutMs`
 * (its wake `slackFor` early, then one I/O turn), whatever happened meanwhile. With
 * `maxTimeoutMs` equal to the timeout that is all there is — a hard bound: a call is decided by
 * its timeout plus however late this process's own timers run; nothing below extends it.
 *
 * Before expiring anything the queue asks for one I/O turn, so a reply already sitting in the
 * socket settles its call first. A wake that comes late while calls are in flight (more than
 * `Stall.STALL_MS` after the later of the wake it meant and the last answer it read: the rule of
 * `deadline/Stall`, which the HTTP client's timers share) means the process was not running: the calls it expires are marked `stalled` (not the store's fault). With a
 * `maxTimeoutMs` above the timeout, calls may also wait past the timeout for what is not the
 * store's fault:
 * - A stalled process: the time it did not run is added to the queue's `stalled` total, and
 *   deadlines are measured on the queue's own time, the caller's clock less that total. After a
 *   stall of `LONG_STALL_MS` or more no call expires for as long again, for a store starved
 *   with this process to answer.
 * - A backlog: an `ordered` queue serves calls whose answers come back in call order (one
 *   connection to one server); an answer to any call (`progress`) shows the server is working
 *   through the calls before the others — slow, not gone. A call then expires once the server
 *   has been silent long enough, at `max(start, last answer) + allowed silence`: the timeout, or
 *   twice the longest silence the server came back from lately if that is longer (`progress`).
 *
 * @since 0.2.0
 */

import * as Stall from "../deadline/Stall.js"

/**
 * A registered call: a node of the queue's doubly linked list.
 *
 * @since 0.2.0
 */
export interface Entry {
  /** the start on the queue's own time (the caller's clock, less the time the process was seen stalled) */
  readonly start: number
  /** the start plus the longest deadline, on the caller's clock (milliseconds, fractional) */
  readonly capAt: number
  settled: boolean
  /**
   * Dropped when settled, so nothing is retained by a settled call. `stalled`: the call
   * expired on a wake that came late because this process did not run (a CPU stall, a long
   * synchronous task), so the store cannot be blamed for the missed deadline.
   */
  onExpire: ((stalled: boolean) => void) | undefined
  prev: Entry | undefined
  next: Entry | undefined
}

/**
 * The timer wakes this much before the oldest deadline and expires it then, so that the
 * deadline bounds the whole check: a Node timer fires late — up to a millisecond by its
 * granularity, and on a shared VM by several milliseconds now and then — and the failure mode's
 * decision then still has to run. A third of the timeout, between 0.5 and 5 ms: 5 ms for the
 * 15 ms and 50 ms deadlines, 1.7 ms for a 5 ms one (a smaller slack let a paused Redis's slowest
 * check pass the deadline + 2 ms: bench/README.md, "Quotas under faults").
 *
 * @since 0.2.0
 */
export const slackFor = (timeoutMs: number): number => Math.min(5, Math.max(0.5, timeoutMs / 3))

/**
 * A stall at least this long is a saturated host, not the hiccups of a busy VM (a few ms late now
 * and then, where a saturated host stalls for tens of ms): after one, a queue with a
 * `maxTimeoutMs` above its timeout expires no call for as long again.
 *
 * @since 0.2.0
 */
export const LONG_STALL_MS = 10

/**
 * Silences heard are kept for one such window and the next (see {@link DeadlineQueue.progress}).
 *
 * @since 0.2.0
 */
export const HEARD_WINDOW_MS = 5000

/**
 * What the binding does after {@link DeadlineQueue.step}: wait for the next registered call
 * (`Idle`: nothing in flight), give the event loop one I/O turn and step again (`IoTurn`: calls
 * are due, and answers already read may settle them first), or sleep `ms` and step again.
 *
 * @since 0.2.0
 */
export type Step =
  { readonly _tag: "Idle" } | { readonly _tag: "IoTurn" } | { readonly _tag: "Sleep"; readonly ms: number }

const IDLE: Step = { _tag: "Idle" }
const IO_TURN: Step = { _tag: "IoTurn" }

/**
 * The queue's options: the timeout (ms), `maxTimeoutMs` (default: the timeout), `ordered` (the
 * store answers in call order), and `onBusy`, called when a call is registered on an idle queue
 * (the binding wakes its timer).
 *
 * @since 0.2.0
 */
export interface Options {
  readonly timeoutMs: number
  readonly maxTimeoutMs?: number | undefined
  readonly ordered?: boolean | undefined
  readonly onBusy: () => void
}

/**
 * The deadline queue (see the module's comment).
 *
 * @since 0.2.0
 */
export class DeadlineQueue {
  private head: Entry | undefined = undefined
  private tail: Entry | undefined = undefined
  private idle = true
  /** the time the timer meant to wake at (-1: woke from idle or an I/O turn) */
  private wakeAt = -1
  /** the I/O turn was given for what is due now: expire what is still due */
  private graced = false
  /** whether the wake that found calls due came late */
  private lateWake = false
  /** milliseconds this process was seen not running while calls were in flight */
  private stalled = 0
  /** no call expires before this (on the caller's clock): the grace after a long stall */
  private graceUntil = -Infinity
  /** the last answer, on the caller's clock */
  private lastAnswerAt = -Infinity
  /** the last answer, on the queue's time (for an `ordered` queue) */
  private lastProgress = -Infinity
  /** how long the server may stay silent: the timeout, or what an `ordered` queue learnt (`progress`) */
  private silenceMs: number
  /** the longest silence that ended in an answer in time, in this window and the one before */
  private heard = 0
  private heardBefore = 0
  private heardSince = -Infinity
  readonly timeoutMs: number
  private readonly capMs: number
  private readonly slackMs: number
  private readonly ordered: boolean
  private readonly onBusy: () => void
  /** `maxTimeout` is the timeout: every call expires at `capAt`, nothing is learnt or granted */
  private readonly hard: boolean

  constructor(options: Options) {
    this.timeoutMs = options.timeoutMs
    this.capMs = Math.max(options.timeoutMs, options.maxTimeoutMs ?? options.timeoutMs)
    this.slackMs = slackFor(options.timeoutMs)
    this.silenceMs = options.timeoutMs
    this.ordered = options.ordered === true
    this.onBusy = options.onBusy
    this.hard = this.capMs === options.timeoutMs
  }

  /**
   * Registers a call that started at `startMs`; `onExpire` runs if `settle` was not called
   * before its deadline.
   */
  register(startMs: number, onExpire: (stalled: boolean) => void): Entry {
    const entry: Entry = {
      start: startMs - this.stalled,
      capAt: startMs + this.capMs,
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
      this.onBusy()
    }
    return entry
  }

  /**
   * An answer came at `nowMs`: the server is working. `answered`: the call it answered, if in
   * time. Then the silence it ended — from the later of the call's start and the previous
   * answer — is one the server came back from, so an ordered queue lets later calls wait twice
   * the longest such silence of the last 5 to 10 seconds (at least the timeout, at most
   * `maxTimeout`): a server that a saturated host starves for 40 ms now and then is not given
   * up on at 50 ms. A late answer (its call expired) teaches nothing.
   */
  progress(nowMs: number, answered?: Entry): void {
    this.lastAnswerAt = nowMs
    if (this.hard) return
    const at = nowMs - this.stalled
    if (this.ordered && answered !== undefined) {
      const gap = at - (this.lastProgress > answered.start ? this.lastProgress : answered.start)
      if (nowMs - this.heardSince >= HEARD_WINDOW_MS) this.age(nowMs)
      if (gap > this.heard) {
        this.heard = gap
        this.allow()
      }
    }
    if (at > this.lastProgress) this.lastProgress = at
  }

  /** Starts a new window of silences heard (the last one is kept for one more window). */
  private age(nowMs: number): void {
    this.heardBefore = nowMs - this.heardSince >= 2 * HEARD_WINDOW_MS ? 0 : this.heard
    this.heard = 0
    this.heardSince = nowMs
    this.allow()
  }

  /** The silence allowed: twice the longest heard, at least the timeout, at most the cap. */
  private allow(): void {
    const heard = this.heard > this.heardBefore ? this.heard : this.heardBefore
    this.silenceMs = Math.min(this.capMs, Math.max(this.timeoutMs, 2 * heard))
  }

  /**
   * When an entry expires, on the caller's clock, if the process runs from now on: a timeout
   * after its start (for an ordered queue: after its start or the last answer, whichever is
   * later) on the queue's time, but never after `capAt`. Non-decreasing along the list (entries
   * are in start order), so the head expires first.
   */
  private dueAt(entry: Entry): number {
    if (this.hard) return entry.capAt
    // only an ordered queue learns a longer silence, so `silenceMs` is the timeout otherwise
    const from = this.ordered && this.lastProgress > entry.start ? this.lastProgress : entry.start
    let due = from + this.silenceMs + this.stalled
    if (due < this.graceUntil) due = this.graceUntil
    return due < entry.capAt ? due : entry.capAt
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

  /**
   * A wake of the timer at `now`: accounts for a late wake, expires what is due (after one I/O
   * turn, asked for first), and says what to do next.
   */
  step(now: number): Step {
    if (this.ordered && !this.hard && now - this.heardSince >= HEARD_WINDOW_MS) this.age(now)
    // Woke late: the process did not run meanwhile, and that time is not the calls'. Only the time
    // since it last ran is counted — the later of the wake it meant and the last answer it read — so
    // a busy event loop that read answers meanwhile is not a stall. A long stall (a saturated
    // host, not the few ms a busy VM takes now and then) is given once more to the calls then in
    // flight (`graceUntil`), for a store starved with this process to answer once both run again;
    // not under a hard bound, which promises the caller its decision by the timeout.
    const late = Stall.stalledFor(now, this.wakeAt, this.lastAnswerAt)
    if (!this.graced && this.wakeAt >= 0 && this.head !== undefined && Stall.isStall(late)) {
      this.stalled += late
      if (late >= LONG_STALL_MS && !this.hard) this.graceUntil = now + late
      this.lateWake = true
    }
    let head = this.head
    if (head !== undefined && this.dueAt(head) - now <= this.slackMs) {
      if (!this.graced) {
        // answers may already sit in the socket: let the event loop read them first
        this.graced = true
        this.wakeAt = -1
        return IO_TURN
      }
      const stalled = this.lateWake
      while (head !== undefined && this.dueAt(head) - now <= this.slackMs) {
        const onExpire = head.onExpire!
        this.settle(head)
        onExpire(stalled)
        head = this.head
      }
    }
    this.graced = false
    this.lateWake = false
    if (head === undefined) {
      this.idle = true
      this.wakeAt = -1
      return IDLE
    }
    const due = this.dueAt(head)
    this.wakeAt = due - this.slackMs
    return { _tag: "Sleep", ms: Math.max(0, due - now - this.slackMs) }
  }
}

/**
 * The admission rules of a concurrency limiter, after Netflix concurrency-limits' `Limiter`:
 * it enforces a {@link Limit.Limit} (grants a permit only while `inFlight < limit`), feeds the
 * limit one sample per permit, and queues the requests that find no free permit.
 *
 * The queue has one wait list per criticality level (most critical served first), each FIFO
 * or LIFO. A level may be guaranteed a share of the limit (`partitions`): while its in-flight
 * count is below `share × limit` its waiters go before any other level's. A full queue
 * (`maxQueue`) makes room for more critical work by displacing the waiter that would be
 * served last among the less critical levels; with none, the newcomer is refused.
 *
 * A waiter may carry a deadline (`Waiter.deadline`, epoch ms): it is never granted a permit
 * once the deadline has passed (`"deadline"`) or cannot be met (`"deadline-unmeetable"`: its
 * time left is below {@link Limiter.serviceTime}, the smoothed time a permit granted now is
 * held, so its work would end after its caller gave up); {@link Limiter.drain} hands such a
 * waiter to {@link Limiter.onMissed} and grants the permit to the next. The estimate is the
 * exponentially smoothed round-trip time of the permits settled `success`, weight 1/8 per
 * sample as TCP's SRTT (RFC 6298); drops and abandoned work do not move it. A limiter that
 * has settled no success yet has no estimate: only a passed deadline refuses.
 *
 * Within a level, work over its customer's quota (`overQuota`, admitted only while there is
 * room) ranks behind the level's other work: it takes a free permit like any work, but waits
 * only where it goes ahead of a waiter already queued (a less critical one), else
 * {@link Limiter.tryAcquire} refuses it at once. A waiting one is in a list of its own behind
 * its level's other work: served after it and displaced before it, and never before or ahead
 * of a more critical level. The wait lists are {@link lane}s: `2 × level`, plus one when over
 * quota.
 *
 * Nothing here waits: a waiter is a plain object (the runtime binding extends it with what
 * resumes its fiber), and "this waiter got a permit" or "this waiter was displaced" are calls
 * to {@link Limiter.onGranted} and {@link Limiter.onDisplaced}, which a binding overrides.
 * Time is a parameter (`now`, clock millis); `context` is whatever the binding's permits
 * carry (e.g. where to read the clock), passed through to {@link Limiter.newPermit}.
 *
 * @since 0.2.0
 */
import * as Criticality from "../criticality/Criticality.js"
import type * as Limit from "../limit/Limit.js"
import * as Field from "../options/Field.js"
import * as Ratio from "../stats/Ratio.js"

/**
 * The number of criticality levels; levels are indices into `Criticality.levels`
 * (0 is `CRITICAL_PLUS`, the most critical).
 *
 * @since 0.2.0
 */
export const LEVELS = Criticality.levels.length

/**
 * The index of each level in `Criticality.levels`.
 *
 * @since 0.2.0
 */
export const levelIndex: Readonly<Record<Criticality.Criticality, number>> = Object.fromEntries(
  Criticality.levels.map((level, i) => [level, i])
) as Record<Criticality.Criticality, number>

/**
 * The number of wait lists: two per level, see {@link lane}.
 *
 * @since 0.2.0
 */
export const LANES = 2 * LEVELS

/**
 * The wait list of work of level `level` (an index): `2 × level`, or the one behind it for
 * work over its customer's quota. Lanes are served in order, so criticality decides first.
 *
 * @since 0.2.0
 */
export const lane = (level: number, overQuota: boolean): number => 2 * level + (overQuota ? 1 : 0)

/**
 * A waiter's state: in the queue, granted a permit, done (used or given back), or refused.
 *
 * @since 0.2.0
 */
export const QUEUED = 0
/** @since 0.2.0 */
export const GRANTED = 1
/** @since 0.2.0 */
export const DONE = 2
/** @since 0.2.0 */
export const REJECTED = 3

/**
 * A granted permit: its `id` (one more per permit granted), when it was granted (`start`),
 * its level, whether it came from the queue, and what the limit's `onDeparture` returned.
 *
 * @since 0.2.0
 */
export class Permit {
  /** What the algorithm's `onDeparture` returned (departure-aware algorithms only). */
  mark: number | undefined = undefined
  constructor(
    readonly id: number,
    readonly start: number,
    readonly level: number,
    /** Granted from the queue: the binding's gauges follow it. */
    readonly queued: boolean
  ) {}
}

/**
 * A request waiting for a permit, linked into its {@link lane}'s wait list.
 *
 * @since 0.2.0
 */
export class Waiter<P extends Permit = Permit> {
  state = QUEUED
  /** When its caller gives up (epoch ms); `Infinity`: never. */
  deadline = Infinity
  permit: P | undefined = undefined
  prev: this | undefined = undefined
  next: this | undefined = undefined
  /** The wait list it joins: {@link lane} of its level. */
  readonly lane: number
  constructor(
    readonly level: number,
    overQuota = false
  ) {
    this.lane = lane(level, overQuota)
  }
}

/**
 * @since 0.2.0
 */
export interface Options {
  /** Waiters allowed at once (0: never queue, refuse with `"limit"`). */
  readonly maxQueue: number
  readonly order: "fifo" | "lifo"
  /** Guaranteed shares of the limit per level, in [0, 1], adding up to at most 1. */
  readonly partitions?: { readonly [L in Criticality.Criticality]?: number | undefined } | undefined
}

/**
 * What is wrong with guaranteed shares (`partitions`), if anything: each level's share is a
 * ratio in [0, 1] (absent: 0), and together they add up to at most 1, exactly (`0.33 + 0.56 +
 * 0.11` is 1 as written, `1.0000000000000002` in floating point).
 *
 * @since 0.2.0
 */
export const partitionsCheck: Field.Check = (partitions) => {
  if (typeof partitions !== "object" || partitions === null) return `expected shares by criticality level`
  const shares: Array<number> = []
  for (const level of Criticality.levels) {
    const share = (partitions as Record<string, unknown>)[level]
    const problem = share === undefined ? undefined : Field.ratio(share)
    if (problem !== undefined) return `${level}: ${problem}`
    shares.push(share === undefined ? 0 : (share as number))
  }
  return Ratio.sumAtMost(shares, 1)
    ? undefined
    : `guaranteed shares must add up to at most 1, got ${shares.join(" + ")}`
}

/**
 * The options a limiter is built with, checked by {@link configure} (defaults in brackets):
 * `algorithm`, a function making the limit of a key (absent: the binding's default),
 * `maxQueue` (1000), `order` (`"fifo"`), `partitions` ({@link partitionsCheck}) and `isDrop`,
 * a function `(error) => boolean` naming more errors that mean overload.
 *
 * @since 0.2.0
 */
export interface Config extends Options {
  readonly algorithm?: ((key: string) => Limit.Limit) | undefined
  readonly isDrop?: ((error: unknown) => boolean) | undefined
}

const fields: Field.Spec<Config> = {
  algorithm: Field.optional(Field.func("a function (key) => Limit")),
  maxQueue: Field.withDefault(Field.nonNegativeInt, 1000),
  order: Field.withDefault<Config["order"]>(Field.oneOf("fifo", "lifo"), "fifo"),
  partitions: Field.optional(partitionsCheck),
  isDrop: Field.optional(Field.func("a function (error) => boolean"))
}

/**
 * Validates the options of one limiter: {@link Config} and its `key` (`"default"`).
 *
 * @since 0.2.0
 */
export const configure = (input: object): Field.Result<Config & { readonly key: string }> =>
  Field.resolve({ key: Field.withDefault(Field.string, "default"), ...fields }, input)

/**
 * Validates the options of a limiter per key: {@link Config}, the same for every key, and
 * `maxKeys` (1024), the keys remembered at once.
 *
 * @since 0.2.0
 */
export const configureService = (input: object): Field.Result<Config & { readonly maxKeys: number }> =>
  Field.resolve({ maxKeys: Field.withDefault(Field.positiveInt, 1024), ...fields }, input)

/**
 * `inFlight < share × limit`: exact for a whole limit (`7 < 0.07 × 100` is true in
 * floating point); a fractional limit (a congestion window) is compared as it is.
 *
 * @since 0.2.0
 */
export const belowShare = (inFlight: number, share: Ratio.ExactRatio, limit: number): boolean =>
  Number.isSafeInteger(limit) ? share.compare(inFlight, limit) < 0 : inFlight < share.value * limit

/**
 * Why a deadline cannot be met: it has passed, or the time left is below the expected service
 * time.
 *
 * @since 1.0.0
 */
export type DeadlineMiss = "deadline" | "deadline-unmeetable"

/**
 * The weight of one sample in the smoothed service time (TCP's SRTT gain, RFC 6298).
 *
 * @since 1.0.0
 */
export const SERVICE_TIME_GAIN = 1 / 8

/**
 * Whether work due by `deadline` can still be done when started at `now`, given the expected
 * service time (`undefined`: no estimate yet, only a passed deadline counts).
 *
 * @since 1.0.0
 */
export const deadlineMiss = (
  deadline: number,
  now: number,
  serviceTime: number | undefined
): DeadlineMiss | undefined =>
  deadline <= now
    ? "deadline"
    : serviceTime !== undefined && deadline - now < serviceTime
      ? "deadline-unmeetable"
      : undefined

/**
 * The limiter's state and rules. `P` and `W` are the binding's permits and waiters; `C` the
 * context its permits are made with.
 *
 * @since 0.2.0
 */
export class Limiter<P extends Permit = Permit, W extends Waiter<P> = Waiter<P>, C = undefined> {
  inFlight = 0
  queued = 0
  /** Permits granted so far (the next permit id). */
  nextId = 0
  private readonly inFlightBy: Array<number> = new Array(LEVELS).fill(0)
  private readonly heads: Array<W | undefined> = new Array(LANES).fill(undefined)
  private readonly tails: Array<W | undefined> = new Array(LANES).fill(undefined)
  private readonly shares: Array<Ratio.ExactRatio> | undefined
  private readonly lifo: boolean
  readonly maxQueue: number
  /**
   * The expected time a permit granted now is held: the smoothed round-trip time of the
   * permits settled `success` (gain {@link SERVICE_TIME_GAIN}); `undefined` until the first.
   */
  serviceTime: number | undefined = undefined

  constructor(
    readonly algorithm: Limit.Limit,
    options: Options
  ) {
    const p = options.partitions
    this.shares = p === undefined ? undefined : Criticality.levels.map((level) => Ratio.make(p[level] ?? 0))
    this.lifo = options.order === "lifo"
    this.maxQueue = options.maxQueue
  }

  /** Makes a permit; a binding overrides it to add its own fields. */
  protected newPermit(id: number, start: number, level: number, queued: boolean, _context: C): P {
    return new Permit(id, start, level, queued) as P
  }

  /** Called when a waiter is granted a permit (`waiter.permit`) while it waits. */
  protected onGranted(_waiter: W): void {}

  /** Called when a waiter is taken out of the queue to make room for more critical work. */
  protected onDisplaced(_waiter: W): void {}

  /** Called when a waiter is taken out of the queue because its deadline cannot be met. */
  protected onMissed(_waiter: W, _miss: DeadlineMiss): void {}

  /** Whether work due by `deadline` can still be done when granted at `now` (see {@link deadlineMiss}). */
  missOf(deadline: number, now: number): DeadlineMiss | undefined {
    return deadline === Infinity ? undefined : deadlineMiss(deadline, now, this.serviceTime)
  }

  /** Nothing in flight and nobody waiting: the limiter may be forgotten (work still running keeps its own). */
  get idle(): boolean {
    return this.inFlight === 0 && this.queued === 0
  }

  /** The limit's current value. */
  get limit(): number {
    return this.algorithm.limit
  }

  /** Requests holding a permit at criticality `level`. */
  inFlightOf(level: Criticality.Criticality): number {
    return this.inFlightBy[levelIndex[level]]!
  }

  /** Waiters at criticality `level`. */
  queuedOf(level: Criticality.Criticality): number {
    return this.queuedAt(levelIndex[level])
  }

  /** Requests holding a permit at level `level` (an index). */
  inFlightAt(level: number): number {
    return this.inFlightBy[level]!
  }

  /** Waiters at level `level` (an index), over quota or not. */
  queuedAt(level: number): number {
    let n = 0
    for (let l = lane(level, false); l <= lane(level, true); l++)
      for (let w = this.heads[l]; w !== undefined; w = w.next) n++
    return n
  }

  /**
   * The uncontended path: a permit when nobody waits and one is free; else `"limit"` when the
   * limiter never queues, `"wait"` when the caller should {@link join} the queue.
   *
   * Work over its customer's quota (`overQuota`) waits only where it would be served before
   * work already waiting (less critical work: it goes ahead, or displaces it from a full
   * queue); anywhere else it is refused with `"limit"` at once. Queued behind its own level,
   * it would hold its caller until the caller gave up — in an overload work within quota takes
   * every permit that frees — and an answer after that is work wasted (the tenants phase of
   * `bench:overload`: 50 over-plan requests of 1,100 timed out in their queue, goodput 0.97).
   */
  tryAcquire(level: number, now: number, context: C, overQuota = false): P | "limit" | "wait" {
    if (this.uncontended) return this.grant(level, now, context, false)
    return this.mayNotWait(level, overQuota) ? "limit" : "wait"
  }

  /** Nobody waits and a permit is free: the next caller takes it at once. */
  private get uncontended(): boolean {
    return this.queued === 0 && this.inFlight < this.algorithm.limit
  }

  /** Past the uncontended path, whether the caller is refused `"limit"` rather than let wait. */
  private mayNotWait(level: number, overQuota: boolean): boolean {
    return this.maxQueue === 0 || (overQuota && this.victimFor(lane(level, true)) === undefined)
  }

  /**
   * What {@link tryAcquire} and then {@link hasRoom} would refuse at once, decided without
   * changing anything: `"limit"` or `"queue-full"`, or `undefined` when the caller would take a
   * permit or a place in the queue. A server's refusal fast path asks this first, so that what
   * is refused for want of room never sets up a pass (`Middleware.loadShed`).
   */
  refusal(level: number, overQuota = false): "limit" | "queue-full" | undefined {
    if (this.uncontended) return undefined
    if (this.mayNotWait(level, overQuota)) return "limit"
    return this.hasRoom(level, overQuota) ? undefined : "queue-full"
  }

  /**
   * Whether settling a permit needs the clock: not for a time-blind limit with nobody waiting
   * (its sample takes the permit's `start` as `now`, and {@link serviceTime} learns nothing:
   * the estimate is taken while work waits, which is when a waiter's deadline is judged).
   */
  get needsClock(): boolean {
    return this.algorithm.usesTime !== false || this.queued !== 0
  }

  private grant(level: number, now: number, context: C, queued: boolean): P {
    this.inFlight++
    this.inFlightBy[level]!++
    const permit = this.newPermit(this.nextId++, now, level, queued, context)
    if (this.algorithm.onDeparture !== undefined) {
      permit.mark = this.algorithm.onDeparture({ id: permit.id, inFlight: this.inFlight, now })
    }
    return permit
  }

  /**
   * A request that held `permit` ended: frees the slot, feeds the limit its sample, then
   * grants freed permits to waiters (made with `context`). Returns the number granted.
   * `timed`: `now` is a clock reading (not the permit's `start` passed for a time-blind limit,
   * {@link needsClock}); only then does a success move {@link serviceTime}.
   */
  release(permit: P, outcome: Limit.Outcome, now: number, context: C, timed = true): number {
    const inFlight = this.inFlight
    // Free the slot before calling the algorithm, so a throwing user algorithm cannot leak it.
    this.inFlight--
    this.inFlightBy[permit.level]!--
    const rtt = now - permit.start
    if (timed && outcome === "success" && rtt >= 0) {
      const estimate = this.serviceTime
      this.serviceTime = estimate === undefined ? rtt : estimate + SERVICE_TIME_GAIN * (rtt - estimate)
    }
    this.algorithm.onSample(
      // Departure-aware algorithms also get when the request left and their mark.
      this.algorithm.onDeparture === undefined
        ? { id: permit.id, nextId: this.nextId, outcome, rtt, inFlight, now }
        : {
            id: permit.id,
            nextId: this.nextId,
            outcome,
            rtt,
            inFlight,
            now,
            departedAt: permit.start,
            mark: permit.mark
          }
    )
    return this.queued > 0 ? this.drain(now, context) : 0
  }

  /** A permit granted to a waiter that never used it: no sample. Returns the number granted. */
  releaseUnused(permit: P, now: number, context: C): number {
    this.inFlight--
    this.inFlightBy[permit.level]!--
    return this.queued > 0 ? this.drain(now, context) : 0
  }

  /**
   * Grants free permits to waiters, in {@link selectNext} order, passing over (and refusing,
   * {@link onMissed}) a waiter whose deadline cannot be met. Returns the number granted.
   */
  drain(now: number, context: C): number {
    let granted = 0
    while (this.queued > 0 && this.inFlight < this.algorithm.limit) {
      const waiter = this.selectNext()
      this.unlink(waiter)
      const miss = this.missOf(waiter.deadline, now)
      if (miss !== undefined) {
        waiter.state = REJECTED
        this.onMissed(waiter, miss)
        continue
      }
      granted++
      waiter.state = GRANTED
      waiter.permit = this.grant(waiter.level, now, context, true)
      this.onGranted(waiter)
    }
    return granted
  }

  /** Shares first: a level below its guaranteed share is served before any other; then by criticality. */
  private selectNext(): W {
    const shares = this.shares
    if (shares !== undefined) {
      const limit = this.algorithm.limit
      for (let l = 0; l < LANES; l++) {
        if (this.heads[l] !== undefined && belowShare(this.inFlightBy[l >> 1]!, shares[l >> 1]!, limit))
          return this.pick(l)
      }
    }
    for (let l = 0; l < LANES; l++) {
      if (this.heads[l] !== undefined) return this.pick(l)
    }
    throw new Error("BUG: selectNext on an empty queue")
  }

  private pick(lane: number): W {
    return (this.lifo ? this.tails[lane] : this.heads[lane])!
  }

  /** The waiter that would be served last among the lanes served after `lane`. */
  private victimFor(lane: number): W | undefined {
    for (let l = LANES - 1; l > lane; l--) {
      if (this.heads[l] !== undefined) return (this.lifo ? this.heads[l] : this.tails[l])!
    }
    return undefined
  }

  /**
   * Whether a waiter at `level` (over quota or not) would find room ({@link makeRoom} would
   * answer `true`), without displacing anyone: lets a binding refuse at once, before it sets
   * up a wait.
   */
  hasRoom(level: number, overQuota = false): boolean {
    return this.queued < this.maxQueue || this.victimFor(lane(level, overQuota)) !== undefined
  }

  /**
   * Room for one more waiter at `level` (over quota or not): `true` when the queue has room, or
   * after displacing the waiter that would be served last among the {@link lane}s served after
   * its own (handed to {@link onDisplaced}); `false` when the queue is full of work served no
   * later.
   */
  makeRoom(level: number, overQuota = false): boolean {
    if (this.queued < this.maxQueue) return true
    const victim = this.victimFor(lane(level, overQuota))
    if (victim === undefined) return false
    this.unlink(victim)
    victim.state = REJECTED
    this.onDisplaced(victim)
    return true
  }

  /** Appends a waiter to its lane's list (after {@link makeRoom}). */
  enqueue(waiter: W): void {
    const tail = this.tails[waiter.lane]
    if (tail === undefined) {
      this.heads[waiter.lane] = waiter
    } else {
      tail.next = waiter
      waiter.prev = tail
    }
    this.tails[waiter.lane] = waiter
    this.queued++
  }

  /** Takes a queued waiter out of the queue (it gave up): its state becomes done. */
  leave(waiter: W): void {
    waiter.state = DONE
    this.unlink(waiter)
  }

  private unlink(waiter: W): void {
    if (waiter.prev === undefined) this.heads[waiter.lane] = waiter.next
    else waiter.prev.next = waiter.next
    if (waiter.next === undefined) this.tails[waiter.lane] = waiter.prev
    else waiter.next.prev = waiter.prev
    waiter.prev = waiter.next = undefined
    this.queued--
  }
}

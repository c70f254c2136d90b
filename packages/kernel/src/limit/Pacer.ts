/**
 * The pacer's arithmetic: when the next departure may leave. A concurrency limit says *how
 * many* requests may be in flight; on its own a limiter sends them as fast as permits free
 * up, so a whole window reaches the backend within milliseconds, finds it full, and the
 * excess is rejected while the backend idles later in the round trip. TCP answers this with
 * pacing (Linux's `sch_fq`, BBR's pacing rate), and so does this module.
 *
 * Two schedules, both plain state over counts (the binding holds the waiters themselves and
 * does the sleeping):
 *
 * - {@link ReservationPacer}: departures leave at most every `srtt / (gain × limit)`, where
 *   `srtt` is the smoothed round trip of successes (RFC 6298 smoothing) and `gain` follows
 *   Linux TCP (`slowStartGain` while the window still doubles). Each arrival reserves the
 *   next slot in arrival order; an idle pacer banks no credit.
 * - {@link ScheduledPacer}: an algorithm that declares `pacingInterval` (see `Limit`) sets
 *   the spacing; departures wait in one FIFO whose head is released every interval, so a
 *   change of rate, a burst or a pause applies to the whole backlog at once.
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"
import type { Limit } from "./Limit.js"

/**
 * RFC 6298 smoothing of a round-trip estimate: the first sample is taken as is, then
 * `srtt + smoothing × (rtt − srtt)`.
 *
 * @since 0.2.0
 */
export const smooth = (srtt: number | undefined, rtt: number, smoothing: number): number =>
  srtt === undefined ? rtt : srtt + smoothing * (rtt - srtt)

/**
 * Whether a round trip is a measurement: negative, NaN or infinite ones are not.
 *
 * @since 0.2.0
 */
export const isRoundTrip = (rtt: number): boolean => rtt >= 0 && Number.isFinite(rtt)

/**
 * What {@link ReservationPacer.reserve} answers when the queue is full.
 *
 * @since 0.2.0
 */
export const QUEUE_FULL = -1

/**
 * The slot `[start, end)` a caller reserved and waits for: counted while `waiting`.
 *
 * @since 0.2.0
 */
export interface Slot {
  readonly start: number
  readonly end: number
  waiting: boolean
}

/**
 * A resolved configuration of the reservation pacer: `gain` in congestion avoidance,
 * `slowStartGain`, `smoothing` in (0, 1], `initialRtt` (millis, paces before the first
 * measured success; `undefined`: do not pace until then), `maxQueue` (waiters; 0 = never
 * wait), `limit` (the window to spread over a round trip, read at each departure) and
 * optionally `slowStart` (whether `slowStartGain` applies).
 *
 * @since 0.2.0
 */
export interface ReservationConfig {
  readonly gain: number
  readonly slowStartGain: number
  readonly smoothing: number
  readonly initialRtt: number | undefined
  readonly maxQueue: number
  readonly limit: () => number
  readonly slowStart?: (() => boolean) | undefined
}

/**
 * The reservation pacer: departures are spaced by {@link interval}, reserved in arrival
 * order. A caller whose slot is in the future waits (bounded by `maxQueue`); one that
 * gives up early frees its place, and the last reservation also gives its slot back.
 *
 * @since 0.2.0
 */
export class ReservationPacer {
  /** Earliest time the next departure may leave. */
  nextDeparture = Number.NEGATIVE_INFINITY
  /** Departures waiting for their slot. */
  queued = 0
  srtt: number | undefined = undefined
  /**
   * The spacing applied by the last {@link reserve} that took a slot; `undefined` when it
   * left on a burst credit (no slot taken).
   */
  reservedInterval: number | undefined = undefined
  /** Departures that leave at once, granted by {@link release}. */
  private burstCredit = 0

  constructor(readonly config: ReservationConfig) {}

  get gain(): number {
    const slowStart = this.config.slowStart
    return slowStart !== undefined && slowStart() ? this.config.slowStartGain : this.config.gain
  }

  /** The current spacing in millis: `srtt / (gain × limit)`, 0 when there is nothing to pace with. */
  get interval(): number {
    const rtt = this.srtt ?? this.config.initialRtt
    if (rtt === undefined) return 0
    const limit = this.config.limit()
    // No usable limit (0, negative, NaN, unbounded): nothing to spread, do not pace.
    if (!(limit > 0) || !Number.isFinite(limit)) return 0
    return rtt / (this.gain * limit)
  }

  /** Takes the round trip of a success into the estimate; `true` when it counted. */
  observe(rttMillis: number): boolean {
    if (!isRoundTrip(rttMillis)) return false
    this.srtt = smooth(this.srtt, rttMillis, this.config.smoothing)
    return true
  }

  /**
   * A positive `k` lets the next `k` departures leave at once and pushes the schedule back by
   * `k` intervals (a burst at the same average rate); a negative `-m` pauses it by `m`.
   */
  release(k: number, now: number): void {
    if (!Number.isFinite(k) || k === 0) return
    const from = this.nextDeparture > now ? this.nextDeparture : now
    if (k > 0) this.burstCredit += Math.floor(k)
    this.nextDeparture = from + Math.abs(k) * this.interval
  }

  /**
   * Reserves the next departure slot: how long to wait (0: leave now), or
   * {@link QUEUE_FULL}. A caller told to wait takes its slot with {@link enter}.
   */
  reserve(now: number): number {
    if (this.burstCredit > 0) {
      this.burstCredit--
      this.reservedInterval = undefined
      return 0
    }
    const depart = this.nextDeparture > now ? this.nextDeparture : now
    const delay = depart - now
    if (delay > 0 && this.queued >= this.config.maxQueue) return QUEUE_FULL
    const interval = this.interval
    this.nextDeparture = depart + interval
    this.reservedInterval = interval
    return delay
  }

  /** A caller told at `now` to wait `delay` starts waiting for the slot it just reserved. */
  enter(now: number, delay: number): Slot {
    this.queued++
    return { start: now + delay, end: this.nextDeparture, waiting: true }
  }

  /** The caller's slot came: it departs and is no longer counted. Idempotent. */
  leave(slot: Slot): void {
    if (!slot.waiting) return
    slot.waiting = false
    this.queued--
  }

  /**
   * A caller gives its slot up before it came (`true` when it was still waiting): the last
   * reservation gives its slot back; earlier ones leave a gap that later departures do not
   * close (they keep their reserved times).
   */
  cancel(slot: Slot): boolean {
    if (!slot.waiting) return false
    this.leave(slot)
    if (this.nextDeparture === slot.end) this.nextDeparture = slot.start
    return true
  }
}

/** Millis below which a departure counts as due (floating-point slack of the schedule). */
const EPSILON = 1e-6

/**
 * What {@link ScheduledPacer.depart} answers.
 *
 * @since 0.2.0
 */
export type Admission = "depart" | "wait" | "full"

/**
 * A resolved configuration of the scheduled pacer: `smoothing` of the round-trip estimate
 * (reported, not used for spacing) and `maxQueue`.
 *
 * @since 0.2.0
 */
export interface ScheduledConfig {
  readonly smoothing: number
  readonly maxQueue: number
}

/**
 * Whether an algorithm drives pacing itself (declares `pacingInterval`).
 *
 * @since 0.2.0
 */
export const drivesPacing = (algorithm: Limit | undefined): algorithm is Limit =>
  algorithm !== undefined && "pacingInterval" in algorithm

/**
 * A departure waiting in a {@link ScheduledPacer}'s FIFO: released (it may leave) or gone (it
 * gave up). A binding extends it with what resumes its caller.
 *
 * @since 0.2.0
 */
export class Waiter {
  released = false
  gone = false
}

/**
 * The pacer an algorithm drives: it follows `algorithm.pacingInterval` (0 when the
 * algorithm does not pace, `Infinity` while it holds departures), runs the algorithm's
 * timer (`nextTimer` / `onTimer`) and takes its bursts and pauses (`takeBurst`). Waiters
 * that {@link join} the FIFO are released in arrival order: {@link onReleased}, which a
 * binding overrides to resume the caller, is called for each; the methods answer how many
 * heads left.
 *
 * @since 0.2.0
 */
export class ScheduledPacer<W extends Waiter = Waiter> {
  nextDeparture = Number.NEGATIVE_INFINITY
  /** Departures waiting in the FIFO. */
  queued = 0
  srtt: number | undefined = undefined
  private burstCredit = 0
  /** Whether a timer runs (see {@link arm}). */
  armed = false
  private readonly waiters: Array<W | undefined> = []
  private head = 0

  constructor(
    readonly config: ScheduledConfig,
    readonly algorithm: Limit
  ) {}

  /** Called when a waiter may leave; a binding overrides it to resume the caller. */
  protected onReleased(_waiter: W): void {}

  /** The gain is the algorithm's: its interval is the spacing itself. */
  get gain(): number {
    return 1
  }

  /** The algorithm's spacing: 0 when it does not pace, `Infinity` while it holds departures. */
  get interval(): number {
    const interval = this.algorithm.pacingInterval
    return interval !== undefined && interval > 0 ? interval : 0
  }

  /** Takes the round trip of a success into the estimate; `true` when it counted. */
  observe(rttMillis: number): boolean {
    if (!isRoundTrip(rttMillis)) return false
    this.srtt = smooth(this.srtt, rttMillis, this.config.smoothing)
    return true
  }

  /**
   * A burst of `k > 0` (or a pause of `-k`): moves the schedule back by `|k|` intervals and
   * answers how many waiting heads leave now; what is left of a burst becomes credit for
   * the next arrivals.
   */
  release(k: number, now: number): number {
    if (!Number.isFinite(k) || k === 0) return 0
    const interval = this.interval
    if (Number.isFinite(interval)) {
      const from = this.nextDeparture > now ? this.nextDeparture : now
      this.nextDeparture = from + Math.abs(k) * interval
    }
    if (k <= 0) return 0
    const n = Math.floor(k)
    const heads = Math.min(n, this.queued)
    this.queued -= heads
    this.burstCredit += n - heads
    return this.releaseHeads(heads)
  }

  /** Releases the next `n` joined waiters still waiting, in arrival order; answers `n`. */
  private releaseHeads(n: number): number {
    const waiters = this.waiters
    for (let left = n; left > 0 && this.head < waiters.length;) {
      const waiter = waiters[this.head]!
      waiters[this.head++] = undefined
      if (waiter.gone) continue
      waiter.released = true
      this.onReleased(waiter)
      left--
    }
    // Drop released slots once they are most of the array (or all of it).
    if (this.head > 1024 && this.head * 2 > waiters.length) {
      waiters.splice(0, this.head)
      this.head = 0
    } else if (this.head === waiters.length) {
      waiters.length = 0
      this.head = 0
    }
    return n
  }

  /**
   * Runs a due algorithm timer, applies a burst or a pause, and answers how many waiting
   * heads are due by `now` (they leave, in order).
   */
  tick(now: number): number {
    const algorithm = this.algorithm
    const timer = algorithm.nextTimer
    if (timer !== undefined && timer <= now + EPSILON && algorithm.onTimer !== undefined) {
      algorithm.onTimer(timer > now ? timer : now)
    }
    let burst = 0
    if (algorithm.takeBurst !== undefined) {
      const k = algorithm.takeBurst(now)
      if (k !== 0) burst = this.release(k, now)
    }
    // `now + EPSILON`: a sleep of `nextDeparture - now` may land a rounding error short.
    const interval = this.interval
    // Holding (`Infinity`): nothing leaves but bursts; when pacing resumes it starts now.
    if (!Number.isFinite(interval)) return burst
    if (!Number.isFinite(this.nextDeparture)) this.nextDeparture = now
    let heads = 0
    while (this.queued > 0 && this.nextDeparture <= now + EPSILON) {
      this.queued--
      heads++
      const from = this.nextDeparture > now - interval ? this.nextDeparture : now
      this.nextDeparture = from + interval
    }
    return burst + this.releaseHeads(heads)
  }

  /**
   * Whether the caller must start a timer now (see {@link wakeAt}): departures wait and no
   * timer runs. One runs from then on until {@link wakeAt} answers `Infinity`.
   */
  arm(): boolean {
    if (this.armed || this.queued === 0) return false
    this.armed = true
    return true
  }

  /**
   * When the timer wakes next to release waiters: the next departure or the algorithm's
   * timer, whichever is first; `Infinity` when nothing waits or everything is held with no
   * timer: the timer then ends (the next arrival or outcome arms one again).
   */
  wakeAt(now: number): number {
    let wake = Number.POSITIVE_INFINITY
    if (this.queued > 0) {
      const timer = this.algorithm.nextTimer
      const departure = Number.isFinite(this.interval) ? this.nextDeparture : Number.POSITIVE_INFINITY
      wake = timer !== undefined && timer > now + EPSILON && timer < departure ? timer : departure
    }
    if (wake === Number.POSITIVE_INFINITY) this.armed = false
    return wake
  }

  /**
   * An arrival, after {@link tick}: it departs now (nothing waits and a burst credit or a
   * due slot is there), waits at the tail of the FIFO (counted), or is refused (full).
   */
  depart(now: number): Admission {
    if (this.queued === 0) {
      if (this.burstCredit > 0) {
        this.burstCredit--
        return "depart"
      }
      const interval = this.interval
      if (Number.isFinite(interval) && this.nextDeparture <= now + EPSILON) {
        const from = this.nextDeparture > now - interval ? this.nextDeparture : now
        this.nextDeparture = from + interval
        return "depart"
      }
    }
    if (this.queued >= this.config.maxQueue) return "full"
    this.queued++
    return "wait"
  }

  /** After {@link depart} answered `"wait"`: the waiter joins the tail of the FIFO. */
  join(waiter: W): void {
    this.waiters.push(waiter)
  }

  /** A waiter gives up before it was released. */
  leave(): void {
    this.queued--
  }

  /** A joined waiter gives up: `true` when it was still waiting (it is no longer counted). */
  abandon(waiter: W): boolean {
    if (waiter.released || waiter.gone) return false
    waiter.gone = true
    this.leave()
    return true
  }
}

/**
 * A pacer's options, checked by {@link configure} (the defaults are in brackets): `limit`, the
 * window to spread over a round trip (a function, read at each departure), `slowStart`
 * (whether `slowStartGain` applies), `algorithm` (a limit that may drive pacing itself),
 * `gain` (1), `slowStartGain` (1.25), `smoothing` in (0, 1] (1/8), `maxQueue` (1000 waiters; 0 =
 * never wait) and `key` (`"default"`, the binding's metric tag). `initialRtt` is the
 * binding's to read, a duration in its own terms.
 *
 * @since 0.2.0
 */
export interface Options {
  readonly limit: () => number
  readonly slowStart?: (() => boolean) | undefined
  readonly algorithm?: Limit | undefined
  readonly gain: number
  readonly slowStartGain: number
  readonly smoothing: number
  readonly maxQueue: number
  readonly key: string
}

const isLimit = (u: unknown): boolean =>
  typeof u === "object" && u !== null && typeof (u as { onSample?: unknown }).onSample === "function"

/**
 * Validates a pacer's {@link Options} and fills in the defaults.
 *
 * @since 0.2.0
 */
export const configure = (input: object): Field.Result<Options> =>
  Field.resolve<Options>(
    {
      limit: Field.required(Field.func("a function () => number, e.g. () => limiter.limit")),
      slowStart: Field.optional(Field.func("a function () => boolean")),
      algorithm: Field.optional(Field.expecting(isLimit, "a Limit (with onSample), e.g. limiter.algorithm")),
      gain: Field.withDefault(Field.positive, 1),
      slowStartGain: Field.withDefault(Field.positive, 1.25),
      smoothing: Field.withDefault(Field.positiveRatio, 0.125),
      maxQueue: Field.withDefault(Field.nonNegativeInt, 1000),
      key: Field.withDefault(Field.string, "default")
    },
    input
  )

/**
 * When a limit is a congestion window (it declares numeric `cwnd` and `ssthresh`), the test
 * for its slow start, `cwnd < ssthresh`, under which a pacer uses `slowStartGain`;
 * `undefined` for any other limit.
 *
 * @since 0.2.0
 */
export const slowStartOf = (limit: Limit): (() => boolean) | undefined => {
  const window = limit as Limit & { readonly cwnd?: unknown; readonly ssthresh?: unknown }
  return typeof window.cwnd === "number" && typeof window.ssthresh === "number"
    ? () => (window.cwnd as number) < (window.ssthresh as number)
    : undefined
}

/**
 * What a pacer takes from the limit whose window it spreads: the limit itself when it drives
 * pacing ({@link drivesPacing}), and a congestion window's slow-start test ({@link slowStartOf}).
 *
 * @since 0.2.0
 */
export const pacingOf = (
  limit: Limit
): { readonly algorithm?: Limit; readonly slowStart?: () => boolean } => {
  const slowStart = slowStartOf(limit)
  return {
    ...(drivesPacing(limit) ? { algorithm: limit } : {}),
    ...(slowStart !== undefined ? { slowStart } : {})
  }
}

/**
 * The load shedder's decisions: utilization against per-criticality thresholds. Utilization
 * decides how much is shed, criticality decides who — SHEDDABLE first, CRITICAL_PLUS last
 * (the criticality scheme of Google's SRE book, "Handling Overload").
 *
 * Utilization is the work in flight divided by `capacity`, smoothed with exponential decay
 * (time constant `smoothing`): the counts hold their values between changes, so folding
 * each stretch as `u += (1 − e^(−Δt/τ)) × (x − u)` is exact for that step signal. A request
 * is judged by the smoothed work of its own level and the more critical ones only, so less
 * critical work never gets a more critical request shed; since those sums shrink as the
 * level rises while thresholds grow, whenever a level is admitted every more critical one is.
 *
 * Within a level, work over its customer's quota (`overQuota`) ranks below the level's other
 * work and above every less critical level: it is judged by all the work of its level and the
 * more critical ones, against {@link overQuotaThreshold} (between its level's threshold and the
 * less critical level's), while the level's other work is judged without it. So a customer
 * over its quota is shed first within its level, never before a less critical level, and its
 * work never gets a within-quota request of its level shed.
 *
 * An event-loop utilization reading (taken by the binding, passed in as a number) adds a
 * second signal, which cannot tell whose work keeps the loop busy: it is applied only to
 * the least critical levels still arriving, never to a level above one that arrived within
 * two sampling intervals. Within one instant every decision sees the same arrivals (those
 * of earlier instants), whatever the order of the requests.
 *
 * Times are epoch milliseconds.
 *
 * @since 0.2.0
 */
import * as Criticality from "../criticality/Criticality.js"
import * as Field from "../options/Field.js"

/**
 * A criticality level (`@sluice/kernel/criticality/Criticality`).
 *
 * @since 0.2.0
 */
export type Level = Criticality.Criticality

/**
 * The utilization from which each level is shed (`Infinity`: never).
 *
 * @since 0.2.0
 */
export type Thresholds = Readonly<Record<Level, number>>

/**
 * SHEDDABLE from 0.8, SHEDDABLE_PLUS from 0.9, CRITICAL from 1.0, CRITICAL_PLUS from 1.1.
 *
 * @since 0.2.0
 */
export const defaultThresholds: Thresholds = {
  SHEDDABLE: 0.8,
  SHEDDABLE_PLUS: 0.9,
  CRITICAL: 1.0,
  CRITICAL_PLUS: 1.1
}

/**
 * The first level whose threshold is below that of a less critical one (a more critical
 * level would be shed first), with that less critical level; `undefined` when ordered.
 *
 * @since 0.2.0
 */
export const misordered = (
  thresholds: Thresholds
): { readonly level: Level; readonly lower: Level } | undefined => Criticality.misordered(thresholds)

/**
 * Options: `capacity` > 0 (work in flight that is utilization 1), `smoothing` > 0 (the time
 * constant, ms, default 1 s), `thresholds` (each positive, default `defaultThresholds`, not
 * decreasing with criticality), and `eventLoop` when an event-loop reading is fed in, with
 * its sampling `interval` (ms, default 1 s).
 *
 * @since 0.2.0
 */
export interface Options {
  readonly capacity: number
  readonly smoothing?: number | undefined
  readonly thresholds?: { readonly [L in Level]?: number | undefined } | undefined
  readonly eventLoop?: { readonly interval?: number | undefined } | undefined
}

/**
 * The defaults: a one-second time constant, and an event-loop reading each second.
 *
 * @since 0.2.0
 */
export const defaults = { smoothing: 1000, eventLoopInterval: 1000 } as const

/**
 * The utilization from which work of a level over its customer's quota is shed: halfway
 * between the level's threshold and the next less critical level's (that one itself when the
 * level's is `Infinity`); for the least critical level, below its threshold by half the step
 * to the next level's (at most half its threshold). With the defaults: 0.75, 0.85, 0.95, 1.05.
 *
 * @since 0.2.0
 */
export const overQuotaThreshold = (thresholds: Thresholds, level: Level): number => {
  const rank = Criticality.rank(level)
  const own = thresholds[level]
  if (rank === 0) {
    const next = thresholds[Criticality.ascending[1]!]
    const step = Number.isFinite(next) && Number.isFinite(own) ? (next - own) / 2 : own / 16
    return own - Math.min(step, own / 2)
  }
  const lower = thresholds[Criticality.ascending[rank - 1]!]
  return Number.isFinite(own) ? (lower + own) / 2 : lower
}

const threshold = Field.expecting(
  (n) => !Number.isNaN(n) && n > 0,
  "a positive number (Infinity: never shed)"
)

// Ascending, as the options are spelled.
const resolveThresholds = (given: Options["thresholds"]): Thresholds =>
  Object.fromEntries(Criticality.ascending.map((l) => [l, given?.[l] ?? defaultThresholds[l]])) as Thresholds

/**
 * Every problem with `options`, each naming its field.
 *
 * @since 0.2.0
 */
export const issues = (options: Options): Array<Field.Issue> => {
  const found = Field.fields([
    ["capacity", options.capacity, Field.positive],
    ["smoothing", options.smoothing, Field.positiveDuration],
    [["eventLoop", "interval"], options.eventLoop?.interval, Field.positiveDuration],
    ...Criticality.ascending.map((l) => [["thresholds", l], options.thresholds?.[l], threshold] as const)
  ])
  const t = resolveThresholds(options.thresholds)
  const wrong = found.length > 0 ? undefined : misordered(t)
  if (wrong !== undefined) {
    const { level, lower } = wrong
    found.push({
      path: ["thresholds", level],
      message: `thresholds.${level} (${t[level]}) must not be below thresholds.${lower} (${t[lower]}): a more critical level may not be shed first`
    })
  }
  return found
}

/**
 * A shedder's counts and decisions. Mutable; owned by one shedder.
 *
 * @since 0.2.0
 */
export interface LoadShedder {
  readonly capacity: number
  readonly thresholds: Thresholds
  /** How often an event-loop reading is fed in (ms), or `undefined` when none is. */
  readonly eventLoopInterval: number | undefined
  /**
   * Judges an arrival of `level` (over its customer's quota or not) at `now`: returns the
   * utilization it is judged by, and records the arrival (it covers the more critical levels
   * from the next instant on).
   */
  readonly arrive: (level: Level, now: number, overQuota?: boolean) => number
  /** Whether work of `level` (over quota or not) judged at `utilization` is shed. */
  readonly sheds: (level: Level, utilization: number, overQuota?: boolean) => boolean
  /** Counts admitted work of `level` (over quota or not) in. */
  readonly admit: (level: Level, overQuota?: boolean) => void
  /** Counts work of `level` (over quota or not) out at `now`. */
  readonly leave: (level: Level, now: number, overQuota?: boolean) => void
  /** The shedder's utilization at `now`: max(smoothed work / capacity, event-loop utilization). */
  readonly utilization: (now: number) => number
  /** The utilization an arrival of `level` (over quota or not) at `now` would be judged by (records nothing). */
  readonly levelUtilization: (level: Level, now: number, overQuota?: boolean) => number
  /** Whether an arrival of `level` (over quota or not) at `now` would be shed (records nothing). */
  readonly wouldShed: (level: Level, now: number, overQuota?: boolean) => boolean
  /** Feeds an event-loop utilization reading: clamped to [0, 1]; a non-finite one keeps the last. */
  readonly setEventLoop: (value: number) => number
  /** The last event-loop utilization fed in (0 until one is). */
  readonly eventLoop: number
  /** Work in flight. */
  readonly active: number
  /** Work of `level` in flight (over quota or not). */
  readonly activeOf: (level: Level) => number
  /** Work of `level` over its customer's quota in flight. */
  readonly overQuotaOf: (level: Level) => number
}

const RANKS = 2 * Criticality.levels.length
/** Two ranks per level, least critical first: over quota below the level's other work. */
const rankOf = (level: Level, overQuota: boolean | undefined): number =>
  2 * Criticality.rank(level) + (overQuota === true ? 0 : 1)

class LoadShedderImpl implements LoadShedder {
  readonly thresholds: Thresholds
  readonly eventLoopInterval: number | undefined
  // Per rank (`rankOf`: two per level, least critical first): requests in flight, and the
  // smoothed amount of work at that rank *or above*.
  private readonly byRank: Array<number> = new Array(RANKS).fill(0)
  private readonly atLeast: Array<number> = new Array(RANKS).fill(0)
  private readonly smoothed: Array<number> = new Array(RANKS).fill(0)
  private readonly rankThresholds: ReadonlyArray<number>
  // When a request of each rank last arrived (admitted or not), and the latest arrival
  // before that instant: cover is given by arrivals of earlier instants only.
  private readonly lastArrival: Array<number> = new Array(RANKS).fill(-Infinity)
  private readonly earlierArrival: Array<number> = new Array(RANKS).fill(-Infinity)
  private last: number | undefined = undefined
  private readonly tau: number
  // How long an arrival of a less critical level keeps the event-loop signal off the
  // more critical ones: two sampling intervals, so that the sample that saw its work does.
  private readonly presence: number
  active = 0
  eventLoop = 0
  constructor(
    readonly capacity: number,
    options: Options
  ) {
    this.thresholds = resolveThresholds(options.thresholds)
    this.rankThresholds = Criticality.ascending.flatMap((level) => [
      overQuotaThreshold(this.thresholds, level),
      this.thresholds[level]
    ])
    this.tau = options.smoothing ?? defaults.smoothing
    this.eventLoopInterval =
      options.eventLoop === undefined ? undefined : (options.eventLoop.interval ?? defaults.eventLoopInterval)
    this.presence = this.eventLoopInterval === undefined ? 0 : 2 * this.eventLoopInterval
    // usable unbound, like the bindings' services
    this.arrive = this.arrive.bind(this)
    this.sheds = this.sheds.bind(this)
    this.admit = this.admit.bind(this)
    this.leave = this.leave.bind(this)
    this.utilization = this.utilization.bind(this)
    this.levelUtilization = this.levelUtilization.bind(this)
    this.wouldShed = this.wouldShed.bind(this)
    this.setEventLoop = this.setEventLoop.bind(this)
    this.activeOf = this.activeOf.bind(this)
    this.overQuotaOf = this.overQuotaOf.bind(this)
  }
  // The counts have held their values since `last`: fold that stretch into the averages
  // before anything changes them.
  private fold(now: number): void {
    const { atLeast, smoothed } = this
    if (this.last === undefined) {
      this.last = now
      for (let i = 0; i < RANKS; i++) smoothed[i] = atLeast[i]!
      return
    }
    const dt = now - this.last
    if (dt > 0) {
      const f = 1 - Math.exp(-dt / this.tau)
      for (let i = 0; i < RANKS; i++) smoothed[i]! += f * (atLeast[i]! - smoothed[i]!)
      this.last = now
    }
  }
  private lowerArrived(rank: number, now: number): boolean {
    for (let i = 0; i < rank; i++) {
      const before = this.lastArrival[i]! < now ? this.lastArrival[i]! : this.earlierArrival[i]!
      if (now - before <= this.presence) return true
    }
    return false
  }
  private rankUtilization(rank: number, now: number): number {
    const eventLoop = this.eventLoop > 0 && !this.lowerArrived(rank, now) ? this.eventLoop : 0
    return Math.max(this.smoothed[rank]! / this.capacity, eventLoop)
  }
  private add(rank: number, delta: number): void {
    this.byRank[rank]! += delta
    this.active += delta
    for (let i = 0; i <= rank; i++) this.atLeast[i]! += delta
  }
  arrive(level: Level, now: number, overQuota?: boolean): number {
    this.fold(now)
    const rank = rankOf(level, overQuota)
    const u = this.rankUtilization(rank, now)
    if (this.lastArrival[rank]! < now) {
      this.earlierArrival[rank] = this.lastArrival[rank]!
      this.lastArrival[rank] = now
    }
    return u
  }
  sheds(level: Level, utilization: number, overQuota?: boolean): boolean {
    return utilization >= this.rankThresholds[rankOf(level, overQuota)]!
  }
  admit(level: Level, overQuota?: boolean): void {
    this.add(rankOf(level, overQuota), 1)
  }
  leave(level: Level, now: number, overQuota?: boolean): void {
    this.fold(now)
    this.add(rankOf(level, overQuota), -1)
  }
  utilization(now: number): number {
    this.fold(now)
    return Math.max(this.smoothed[0]! / this.capacity, this.eventLoop)
  }
  levelUtilization(level: Level, now: number, overQuota?: boolean): number {
    this.fold(now)
    return this.rankUtilization(rankOf(level, overQuota), now)
  }
  wouldShed(level: Level, now: number, overQuota?: boolean): boolean {
    return this.levelUtilization(level, now, overQuota) >= this.rankThresholds[rankOf(level, overQuota)]!
  }
  setEventLoop(value: number): number {
    // A broken reading (NaN, out of range) must not shed everything or nothing: clamp or keep the last one.
    if (Number.isFinite(value)) this.eventLoop = Math.min(1, Math.max(0, value))
    return this.eventLoop
  }
  activeOf(level: Level): number {
    const rank = rankOf(level, false)
    return this.byRank[rank]! + this.byRank[rank - 1]!
  }
  overQuotaOf(level: Level): number {
    return this.byRank[rankOf(level, true)]!
  }
}

/**
 * Makes a shedder. Throws a `RangeError` for options with `issues` (bindings check them
 * first and report every field).
 *
 * @since 0.2.0
 */
export const make = (options: Options): LoadShedder => {
  Field.orThrow(issues(options))
  return new LoadShedderImpl(options.capacity, options)
}

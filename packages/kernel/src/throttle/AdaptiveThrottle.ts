/**
 * Client-side adaptive throttling, the rule of Google's SRE book ("Handling Overload").
 * Per backend, over a rolling window, `requests` counts everything the application tried
 * (including what the throttle failed locally) and `accepts` what the backend answered
 * without a rejection. A request is failed locally with probability
 *
 * ```text
 * p = max(0, (requests − K × accepts) / (requests + 1))
 * ```
 *
 * so once a backend rejects more than it accepts, the excess never leaves the client; at
 * steady state, against a backend accepting a share `a`, `p ≈ 1 − K·a`. Two guards: `p` is
 * capped at `maxProbability` (< 1), so the backend is always probed and its recovery
 * noticed; and below `minRequestRate` requests per second over the window nothing is
 * throttled, so a quiet client is never locked out.
 *
 * K depends on the request's criticality: a smaller K throttles earlier and harder, so less
 * critical work is throttled first. From a base `k`, level weights `w` give
 * `K = 1 + w (k − 1)` (SHEDDABLE 0.5, SHEDDABLE_PLUS 0.75, CRITICAL 1, CRITICAL_PLUS 2).
 *
 * Per backend, `Backend` keeps the window: rolling counters (`stats/RollingCounter`) of
 * `buckets` slices; the rule also reads plain counts, from whatever window keeps them.
 *
 * A request is counted when it is admitted, before the call, in the bucket of its own time
 * (`Backend.admit`), and its outcome is filed in that same bucket (`Backend.settleAdmitted`),
 * so a request and its accept leave the window together; an outcome that comes after its
 * request has left the window counts nothing (go-zero #5011). A request still in flight is a
 * request but neither an accept nor a rejection: the formula runs over the settled ones, so a
 * burst of calls in flight never reads as rejections (a backend that stops answering is
 * learned from as its attempts time out; the concurrency limiter bounds what is in flight until
 * then). A caller's window must therefore be at least as long as its longest attempt timeout:
 * `SluiceHttpClient` refuses an `attemptTimeout` longer than its throttle's window.
 *
 * @since 0.2.0
 */
import * as Criticality from "../criticality/Criticality.js"
import * as Field from "../options/Field.js"
import * as BoundedMap from "../stats/BoundedMap.js"
import { RollingCounter } from "../stats/RollingCounter.js"

/**
 * A criticality level (`@sluice/kernel/criticality/Criticality`).
 *
 * @since 0.2.0
 */
export type Level = Criticality.Criticality

/**
 * K per criticality level.
 *
 * @since 0.2.0
 */
export type KByCriticality = Readonly<Record<Level, number>>

/**
 * The weight of each level in `K = 1 + w (k − 1)`.
 *
 * @since 0.2.0
 */
export const criticalityWeights: KByCriticality = {
  SHEDDABLE: 0.5,
  SHEDDABLE_PLUS: 0.75,
  CRITICAL: 1,
  CRITICAL_PLUS: 2
}

/**
 * K per level from a base `k` (the CRITICAL one): with `k = 2`, 1.5, 1.75, 2 and 3.
 *
 * @since 0.2.0
 */
export const defaultKByCriticality = (k: number): Record<Level, number> => ({
  SHEDDABLE: 1 + (k - 1) * criticalityWeights.SHEDDABLE,
  SHEDDABLE_PLUS: 1 + (k - 1) * criticalityWeights.SHEDDABLE_PLUS,
  CRITICAL: 1 + (k - 1) * criticalityWeights.CRITICAL,
  CRITICAL_PLUS: 1 + (k - 1) * criticalityWeights.CRITICAL_PLUS
})

/**
 * The first level whose K is below that of a less critical one (it would be throttled
 * earlier), with that less critical level; `undefined` when ordered.
 *
 * @since 0.2.0
 */
export const misordered = (k: KByCriticality): { readonly level: Level; readonly lower: Level } | undefined =>
  Criticality.misordered(k)

/**
 * The steady-state probability the formula predicts for a backend that accepts
 * `acceptShare` of the requests offered (ignoring the `+ 1`, before the cap).
 *
 * @since 0.2.0
 */
export const steadyStateProbability = (acceptShare: number, k: number): number =>
  Math.max(0, 1 - k * acceptShare)

/**
 * Options, each optional: `window` > 0 (ms, default 2 minutes) sliced into `buckets` (a
 * positive integer, default 24), `k` ≥ 1 (default 2) or `kByCriticality` (every K ≥ 1, not
 * decreasing with criticality), `maxProbability` in [0, 1) (default 0.9), `minRequestRate`
 * ≥ 0 requests per second (default 1), and `maxKeys`, the backends kept (`Backends`, a
 * positive integer, default 1024).
 *
 * @since 0.2.0
 */
export interface Options {
  readonly window?: number | undefined
  readonly buckets?: number | undefined
  readonly k?: number | undefined
  readonly kByCriticality?: KByCriticality | undefined
  readonly maxProbability?: number | undefined
  readonly minRequestRate?: number | undefined
  readonly maxKeys?: number | undefined
}

/**
 * The defaults.
 *
 * @since 0.2.0
 */
export const defaults = {
  window: 120_000,
  buckets: 24,
  k: 2,
  maxProbability: 0.9,
  minRequestRate: 1,
  maxKeys: 1024
} as const

const kRange = Field.expecting((n) => Number.isFinite(n) && n >= 1, "a finite number >= 1")
const probability = Field.expecting(
  (n) => n >= 0 && n < 1,
  "a probability in [0, 1) (the backend must always be probed)"
)

/**
 * Every problem with `options`, each naming its field.
 *
 * @since 0.2.0
 */
export const issues = (options: Options): Array<Field.Issue> => {
  const kOf = options.kByCriticality
  const found = Field.fields([
    ["window", options.window, Field.positiveDuration],
    ["buckets", options.buckets, Field.positiveInt],
    ["k", options.k, kRange],
    ["maxProbability", options.maxProbability, probability],
    ["minRequestRate", options.minRequestRate, Field.nonNegative],
    ["maxKeys", options.maxKeys, Field.positiveInt],
    ...Criticality.ascending.map((level) => [["kByCriticality", level], kOf?.[level], kRange] as const)
  ])
  const wrong = kOf === undefined ? undefined : misordered(kOf)
  if (kOf !== undefined && wrong !== undefined) {
    const { level, lower } = wrong
    found.push({
      path: ["kByCriticality", level],
      message: `kByCriticality.${level} (${kOf[level]}) must not be below kByCriticality.${lower} (${kOf[lower]}): a more critical level may not be throttled earlier`
    })
  }
  return found
}

/**
 * A throttle's rule, resolved from its options.
 *
 * @since 0.2.0
 */
export interface AdaptiveThrottle {
  /** The window, in milliseconds. */
  readonly window: number
  readonly buckets: number
  readonly kByCriticality: KByCriticality
  readonly maxProbability: number
  readonly minRequestRate: number
  /** How many backends a throttle keeps (`Backends`). */
  readonly maxKeys: number
  /** Fewer requests than this in the window are never throttled. */
  readonly minRequests: number
  /** The local rejection probability for work of `level`, given the window's counts. */
  readonly probability: (level: Level, requests: number, accepts: number) => number
  /** Whether no level can be throttled with these counts (every probability is 0). */
  readonly allClear: (requests: number, accepts: number) => boolean
}

/**
 * What a settled call teaches the throttle: `"accept"` (a request the backend answered,
 * success or not), `"reject"` (a request without an accept: the backend dropped it), or
 * `undefined` — work refused on this side or abandoned by its caller says nothing about
 * the backend.
 *
 * @since 0.2.0
 */
export const learn = (
  outcome: "success" | "dropped" | "refused" | "ignored" | "failed"
): "accept" | "reject" | undefined =>
  outcome === "success" || outcome === "failed" ? "accept" : outcome === "dropped" ? "reject" : undefined

/**
 * Resolves a throttle's rule. Throws a `RangeError` for options with `issues` (bindings
 * check them first and report every field).
 *
 * @since 0.2.0
 */
export const make = (options: Options = {}): AdaptiveThrottle => {
  Field.orThrow(issues(options))
  const { window = defaults.window, buckets = defaults.buckets, k = defaults.k } = options
  const { maxProbability = defaults.maxProbability, minRequestRate = defaults.minRequestRate } = options
  const { maxKeys = defaults.maxKeys } = options
  const kOf: KByCriticality = options.kByCriticality ?? defaultKByCriticality(k)
  const minRequests = minRequestRate * (window / 1000)
  const kMin = Math.min(...Criticality.ascending.map((level) => kOf[level]))
  return {
    window,
    buckets,
    kByCriticality: kOf,
    maxProbability,
    minRequestRate,
    maxKeys,
    minRequests,
    probability: (level, requests, accepts) => {
      if (requests === 0 || requests < minRequests) return 0
      const p = (requests - kOf[level] * accepts) / (requests + 1)
      return p <= 0 ? 0 : p > maxProbability ? maxProbability : p
    },
    allClear: (requests, accepts) => requests === 0 || requests < minRequests || requests <= kMin * accepts
  }
}

/**
 * One backend's window under a throttle's rule: `requests` and `accepts` over the rule's
 * rolling window. Mutable; the owner passes the time (`now`, epoch ms) to every call.
 *
 * It also remembers the probability each level was last reported with, so that a gauge of
 * it is pushed only when it changes (`judge`).
 *
 * @since 0.2.0
 */
export class Backend {
  /** Everything the application tried, including what the throttle failed locally. */
  readonly requests: RollingCounter
  /** What the backend answered without a rejection. */
  readonly accepts: RollingCounter
  /** Requests admitted and not settled yet, in the buckets of their admission. */
  readonly pending: RollingCounter
  /**
   * The time of the latest request to this backend. A settled call is counted at that time
   * (`count`), so a call reads the clock once; a rolling counter files an earlier time into
   * its current bucket.
   */
  lastUsed = 0
  private readonly reported: Record<Level, number> = {
    CRITICAL_PLUS: -1,
    CRITICAL: -1,
    SHEDDABLE_PLUS: -1,
    SHEDDABLE: -1
  }
  /** Levels whose probability has not been reported as 0 yet. */
  private unreportedZeros = Criticality.levels.length
  constructor(readonly rule: AdaptiveThrottle) {
    const options = { windowMillis: rule.window, buckets: rule.buckets }
    this.requests = new RollingCounter(options)
    this.accepts = new RollingCounter(options)
    this.pending = new RollingCounter(options)
  }
  /** Counts a request admitted at `now`, before its call: a request, in flight. */
  admit(now: number): void {
    this.requests.add(now)
    this.pending.add(now)
  }
  /**
   * Files what the call admitted at `at` taught (`learn`), as seen at `now`, in the bucket of
   * its request, and returns it: an accept or a rejection while that request is still in the
   * window, nothing after it has left (the request is gone, so is its outcome). Work refused on
   * this side or abandoned by its caller takes its request back.
   */
  settleAdmitted(
    at: number,
    outcome: Parameters<typeof learn>[0],
    now: number
  ): "accept" | "reject" | undefined {
    this.pending.removeAt(at, now)
    const lesson = learn(outcome)
    if (lesson === undefined) {
      this.requests.removeAt(at, now)
      return undefined
    }
    if (lesson === "accept") return this.accepts.addAt(at, now) ? lesson : undefined
    return this.requests.holds(at, now) ? lesson : undefined
  }
  /** Requests in the window that have settled (the formula's `requests`), at `now`. */
  private settled(now: number): number {
    return this.requests.total(now) - this.pending.total(now)
  }
  /** Counts a request at `now`, and an accept too when `accepted`. */
  record(now: number, accepted: boolean): void {
    this.requests.add(now)
    if (accepted) this.accepts.add(now)
  }
  /** Counts a request at `lastUsed`, and an accept too when `accepted`. */
  count(accepted: boolean): void {
    this.record(this.lastUsed, accepted)
  }
  /**
   * Counts what a settled call teaches (`learn`) at `lastUsed`, and returns it: the
   * backend's answer decides, and work refused on this side or abandoned counts not at all.
   */
  settle(outcome: Parameters<typeof learn>[0]): "accept" | "reject" | undefined {
    const lesson = learn(outcome)
    if (lesson !== undefined) this.count(lesson === "accept")
    return lesson
  }
  /** The local rejection probability for work of `level` at `now`. */
  probability(level: Level, now: number): number {
    return this.rule.probability(level, this.settled(now), this.accepts.total(now))
  }
  /** Whether no level can be throttled at `now`. */
  allClear(now: number): boolean {
    return this.rule.allClear(this.settled(now), this.accepts.total(now))
  }
  /**
   * The probability for work of `level` at `now`, telling `changed` of each level whose
   * probability differs from the one it was last told: the level judged, or, while no level
   * can be throttled, every level not yet told 0 (most critical first). The common case,
   * all clear and all told, reads the counters once and tells nothing.
   */
  judge(level: Level, now: number, changed: (level: Level, probability: number) => void): number {
    if (this.allClear(now)) {
      if (this.unreportedZeros > 0) for (const l of Criticality.levels) this.tell(l, 0, changed)
      return 0
    }
    const p = this.probability(level, now)
    this.tell(level, p, changed)
    return p
  }
  private tell(level: Level, p: number, changed: (level: Level, probability: number) => void): void {
    const last = this.reported[level]
    if (last === p) return
    if (p === 0) this.unreportedZeros--
    else if (last === 0) this.unreportedZeros++
    this.reported[level] = p
    changed(level, p)
  }
  /** The window's counts at `now`: requests (in flight included), accepts, and requests in flight. */
  totals(now: number): { readonly requests: number; readonly accepts: number; readonly inFlight: number } {
    return {
      requests: this.requests.total(now),
      accepts: this.accepts.total(now),
      inFlight: this.pending.total(now)
    }
  }
}

/**
 * The label of every key past the first `capacity` distinct ones.
 *
 * @since 0.2.0
 */
export const OTHER_KEY = "_other"

/**
 * A throttle's backends by key: at most `capacity`, the least recently used evicted
 * (`stats/BoundedMap`, CLOCK). Each backend is made with a label for per-key reporting: its
 * key for the first `capacity` distinct keys ever seen, `OTHER_KEY` for every later one, so
 * the labels stay bounded while keys come and go.
 *
 * @since 0.2.0
 */
export class Backends<B extends Backend> {
  private readonly map: BoundedMap.BoundedMap<string, B>
  private readonly labelled = new Set<string>()
  constructor(
    readonly capacity: number,
    private readonly make: (key: string, label: string) => B
  ) {
    this.map = BoundedMap.make({ capacity })
  }
  /** The backend of `key`, made if needed, used at `now` (its `lastUsed`). */
  get(key: string, now: number): B {
    let backend = this.map.get(key)
    if (backend === undefined) {
      backend = this.make(key, this.label(key))
      this.map.set(key, backend)
    }
    backend.lastUsed = now
    return backend
  }
  /** The backend of `key` if kept, without using it. */
  peek(key: string): B | undefined {
    return this.map.peek(key)
  }
  /** The keys kept. */
  keys(): IterableIterator<string> {
    return this.map.keys()
  }
  private label(key: string): string {
    if (this.labelled.has(key)) return key
    if (this.labelled.size >= this.capacity) return OTHER_KEY
    this.labelled.add(key)
    return key
  }
}

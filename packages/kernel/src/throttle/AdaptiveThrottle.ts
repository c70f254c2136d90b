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
 * Per backend, `Backend` keeps the window: two rolling counters (`stats/RollingCounter`) of
 * `buckets` slices; the rule also reads plain counts, from whatever window keeps them.
 *
 * @since 0.2.0
 */
import * as Criticality from "../criticality/Criticality.js"
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
 * Validated options: `window` > 0 (ms) sliced into `buckets` (a positive integer, default
 * 24), `k` ≥ 1 (default 2) or `kByCriticality` (every
 * K ≥ 1, not decreasing with criticality), `maxProbability` in [0, 1) (default 0.9),
 * `minRequestRate` ≥ 0 requests per second (default 1).
 *
 * @since 0.2.0
 */
export interface Options {
  readonly window: number
  readonly buckets?: number | undefined
  readonly k?: number | undefined
  readonly kByCriticality?: KByCriticality | undefined
  readonly maxProbability?: number | undefined
  readonly minRequestRate?: number | undefined
}

/**
 * The defaults bindings fill in.
 *
 * @since 0.2.0
 */
export const defaults = {
  window: 120_000,
  buckets: 24,
  k: 2,
  maxProbability: 0.9,
  minRequestRate: 1
} as const

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
 * Resolves a throttle's rule. Throws a `RangeError` for options outside the rules of
 * `Options` (bindings validate them first and report the field).
 *
 * @since 0.2.0
 */
export const make = (options: Options): AdaptiveThrottle => {
  const { window } = options
  const buckets = options.buckets ?? defaults.buckets
  const k = options.k ?? defaults.k
  const maxProbability = options.maxProbability ?? defaults.maxProbability
  const minRequestRate = options.minRequestRate ?? defaults.minRequestRate
  if (!(Number.isFinite(window) && window > 0))
    throw new RangeError(`expected a positive window, got ${window}`)
  if (!(Number.isSafeInteger(buckets) && buckets > 0))
    throw new RangeError(`expected a positive integer buckets, got ${buckets}`)
  if (!(Number.isFinite(k) && k >= 1)) throw new RangeError(`expected k >= 1, got ${k}`)
  if (!(maxProbability >= 0 && maxProbability < 1))
    throw new RangeError(`expected maxProbability in [0, 1), got ${maxProbability}`)
  if (!(Number.isFinite(minRequestRate) && minRequestRate >= 0))
    throw new RangeError(`expected minRequestRate >= 0, got ${minRequestRate}`)
  const kOf: KByCriticality = options.kByCriticality ?? defaultKByCriticality(k)
  for (const level of Criticality.ascending) {
    if (!(Number.isFinite(kOf[level]) && kOf[level] >= 1))
      throw new RangeError(`expected K >= 1 for ${level}, got ${kOf[level]}`)
  }
  const wrong = misordered(kOf)
  if (wrong !== undefined)
    throw new RangeError(`kByCriticality.${wrong.level} must not be below kByCriticality.${wrong.lower}`)
  const minRequests = minRequestRate * (window / 1000)
  const kMin = Math.min(...Criticality.ascending.map((level) => kOf[level]))
  return {
    window,
    buckets,
    kByCriticality: kOf,
    maxProbability,
    minRequestRate,
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
 * @since 0.2.0
 */
export class Backend {
  /** Everything the application tried, including what the throttle failed locally. */
  readonly requests: RollingCounter
  /** What the backend answered without a rejection. */
  readonly accepts: RollingCounter
  constructor(readonly rule: AdaptiveThrottle) {
    const options = { windowMillis: rule.window, buckets: rule.buckets }
    this.requests = new RollingCounter(options)
    this.accepts = new RollingCounter(options)
  }
  /** Counts a request at `now`, and an accept too when `accepted`. */
  record(now: number, accepted: boolean): void {
    this.requests.add(now)
    if (accepted) this.accepts.add(now)
  }
  /** The local rejection probability for work of `level` at `now`. */
  probability(level: Level, now: number): number {
    return this.rule.probability(level, this.requests.total(now), this.accepts.total(now))
  }
  /** Whether no level can be throttled at `now`. */
  allClear(now: number): boolean {
    return this.rule.allClear(this.requests.total(now), this.accepts.total(now))
  }
  /** The window's counts at `now`. */
  totals(now: number): { readonly requests: number; readonly accepts: number } {
    return { requests: this.requests.total(now), accepts: this.accepts.total(now) }
  }
}

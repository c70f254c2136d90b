/**
 * An exact reference for the quota algorithms, written from their definitions in BigInt, with
 * no float anywhere, for clocks at epoch magnitude (~1.8e12 ms) and rates such as 7/s or
 * 1e9/hour:
 *
 * - GCRA (virtual scheduling, ITU-T I.371): emission interval T = period / limit, tolerance
 *   τ = burst × T. A request of `cost` units at time `now` conforms if
 *   `max(TAT, now) + cost × T − τ <= now`; then `TAT = max(TAT, now) + cost × T`. Every time is
 *   kept multiplied by `limit`, so T is the integer `period`. Remaining: whole units that would
 *   still conform; reset: time until TAT <= now.
 * - The sliding-window counter, from the full log of what was admitted: the units of the
 *   current fixed window plus those of the previous one weighted by the share of it the moving
 *   window still covers.
 *
 * - A block (a plan's `blockFor`, rate-limiter-flexible's `blockDuration`): a denial of a request
 *   (not a peek) while the client is not blocked blocks it for `blockFor`, and its reported wait is
 *   at least the block; while blocked every tier denies, nothing is consumed, and every tier's wait
 *   is at least the time left.
 *
 * Times are integer milliseconds. A cost of 0 peeks (decided as one unit, nothing consumed).
 */
export interface ExactTier {
  readonly name: string
  readonly algorithm: "gcra" | "sliding-window"
  readonly limit: number
  readonly periodMs: number
  /** gcra only */
  readonly burst?: number | undefined
}

export interface ExactTierDecision {
  readonly allowed: boolean
  readonly remaining: number
  readonly resetMs: number
  /** 0 when allowed; Infinity when the cost exceeds the tier's capacity */
  readonly retryAfterMs: number
}

export interface ExactResult {
  readonly allowed: boolean
  readonly tiers: Array<ExactTierDecision>
  /** the time left of the block in force after this check (0: none) */
  readonly blockedMs: number
}

const big = BigInt
const max = (a: bigint, b: bigint) => (a > b ? a : b)
const floorDiv = (a: bigint, b: bigint) => {
  const q = a / b
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q
}
const ceilDiv = (a: bigint, b: bigint) => -floorDiv(-a, b)

export class ExactReference {
  /** per gcra tier: TAT × limit, or undefined before the first admission */
  private readonly tat: Array<bigint | undefined>
  private readonly log: Array<{ t: bigint; cost: bigint }> = []
  /** blocked until (ms), or undefined */
  private blockedUntil: bigint | undefined = undefined
  constructor(
    readonly tiers: ReadonlyArray<ExactTier>,
    /** the plan's `blockFor` in ms (0: none) */
    readonly blockForMs = 0
  ) {
    this.tat = tiers.map(() => undefined)
  }

  private blockedAt(now: bigint): boolean {
    return this.blockedUntil !== undefined && this.blockedUntil > now
  }

  private capacity(tier: ExactTier): bigint {
    return big(tier.algorithm === "gcra" ? (tier.burst ?? tier.limit) : tier.limit)
  }

  private gcra(i: number, now: bigint, cost: bigint) {
    const tier = this.tiers[i]!
    const L = big(tier.limit)
    const P = big(tier.periodMs)
    const C = this.capacity(tier)
    const nowL = now * L
    const base = max(this.tat[i] ?? nowL, nowL)
    const allowed = cost <= C && base + cost * P - C * P <= nowL
    return { L, P, C, nowL, base, allowed }
  }

  private window(i: number, now: bigint) {
    const tier = this.tiers[i]!
    const P = big(tier.periodMs)
    const w = floorDiv(now, P)
    let cur = 0n
    let prev = 0n
    for (const entry of this.log) {
      const ew = floorDiv(entry.t, P)
      if (ew === w) cur += entry.cost
      else if (ew === w - 1n) prev += entry.cost
    }
    const elapsed = now - w * P
    return { P, w, cur, prev, elapsed, C: this.capacity(tier) }
  }

  /** whether the client is not blocked and every tier admits `cost` at `now` (no consumption) */
  passes(nowMs: number, costUnits: number): boolean {
    const now = big(nowMs)
    const cost = big(costUnits)
    if (this.blockedAt(now)) return false
    return this.tiers.every((tier, i) => {
      if (tier.algorithm === "gcra") return this.gcra(i, now, cost).allowed
      const { C, P, cur, elapsed, prev } = this.window(i, now)
      return cur + cost <= C && prev * (P - elapsed) + (cur + cost) * P <= C * P
    })
  }

  check(nowMs: number, costUnits: number): ExactResult {
    const now = big(nowMs)
    const peek = costUnits === 0
    const cost = big(peek ? 1 : costUnits)
    const verdicts = this.tiers.map((tier, i) => {
      if (tier.algorithm === "gcra") return this.gcra(i, now, cost).allowed
      const { C, P, cur, elapsed, prev } = this.window(i, now)
      return cur + cost <= C && prev * (P - elapsed) + (cur + cost) * P <= C * P
    })
    const blocked = this.blockedAt(now)
    const allowed = !blocked && verdicts.every((v) => v)
    const consume = allowed && !peek
    const tiers = this.tiers.map((tier, i): ExactTierDecision => {
      if (tier.algorithm === "gcra") {
        const { C, L, P, allowed: pass, base, nowL } = this.gcra(i, now, cost)
        const after = consume ? base + cost * P : base
        const remaining = floorDiv(nowL + C * P - after, P)
        return {
          allowed: pass,
          remaining: Number(remaining < 0n ? 0n : remaining),
          resetMs: Number(ceilDiv(after - nowL, L)),
          retryAfterMs: pass ? 0 : cost > C ? Infinity : Number(ceilDiv(base + cost * P - C * P - nowL, L))
        }
      }
      const { C, P, cur, elapsed, prev, w } = this.window(i, now)
      const c = consume ? cur + cost : cur
      const remaining = floorDiv(C * P - prev * (P - elapsed) - c * P, P)
      const start = w * P
      const reset = c > 0n ? start + 2n * P - now : prev > 0n ? start + P - now : 0n
      let retryAfterMs = 0
      if (!verdicts[i]) {
        if (cost > C) retryAfterMs = Infinity
        else {
          // the first whole millisecond at which the estimate has room, searched exactly
          retryAfterMs = this.searchWindow(i, now, cost)
        }
      }
      return {
        allowed: verdicts[i]!,
        remaining: Number(remaining < 0n ? 0n : remaining),
        resetMs: Number(reset),
        retryAfterMs
      }
    })
    if (consume) {
      this.tiers.forEach((tier, i) => {
        if (tier.algorithm === "gcra") this.tat[i] = this.gcra(i, now, cost).base + cost * big(tier.periodMs)
      })
      this.log.push({ t: now, cost })
    }
    if (blocked) {
      // every tier denies until the block ends (or later, if the tier itself says so)
      const left = Number(this.blockedUntil! - now)
      return {
        allowed: false,
        tiers: tiers.map((t) => ({ ...t, allowed: false, retryAfterMs: Math.max(t.retryAfterMs, left) })),
        blockedMs: left
      }
    }
    if (!allowed && !peek && this.blockForMs > 0) {
      // the denial that starts a block: whoever waits what it reports is past the block
      this.blockedUntil = now + big(this.blockForMs)
      return {
        allowed,
        tiers: tiers.map((t) =>
          t.allowed ? t : { ...t, retryAfterMs: Math.max(t.retryAfterMs, this.blockForMs) }
        ),
        blockedMs: this.blockForMs
      }
    }
    return { allowed, tiers, blockedMs: 0 }
  }

  /** The sliding-window tier's first admitting millisecond after `now`, by bisection (the estimate only falls). */
  private searchWindow(i: number, now: bigint, cost: bigint): number {
    const admits = (t: bigint) => {
      const { C, P, cur, elapsed, prev } = this.window(i, t)
      return cur + cost <= C && prev * (P - elapsed) + (cur + cost) * P <= C * P
    }
    let lo = now
    let hi = now + 2n * big(this.tiers[i]!.periodMs)
    while (hi - lo > 1n) {
      const mid = (lo + hi) / 2n
      if (admits(mid)) hi = mid
      else lo = mid
    }
    return Number(hi - now)
  }
}

/**
 * Brute-force reference models for the quota algorithms, written independently of
 * the stores: GCRA as a token bucket whose credit is kept in time units (exact in
 * integers); the sliding-window counter from the full log of everything admitted:
 * the units admitted in the current fixed window (`floor(t / period)`) plus those
 * of the previous one weighted by the share of it the moving window still covers,
 * i.e. `prev × (period − elapsed) / period + cur`, compared multiplied by `period`.
 * Times are in any integer unit (ms under TestClock, µs for Redis).
 */
export interface RefTier {
  readonly name: string
  readonly algorithm: "gcra" | "sliding-window"
  /** gcra: bucket size; sliding-window: limit */
  readonly capacity: number
  /** gcra: time units per token; sliding-window: window length */
  readonly unit: number
}

interface GcraState {
  credit: number
  last: number
}

export class Reference {
  private readonly gcra = new Map<number, GcraState>()
  private readonly log: Array<{ t: number; cost: number }> = []
  constructor(readonly tiers: ReadonlyArray<RefTier>) {}

  private credit(i: number, now: number): number {
    const tier = this.tiers[i]!
    const full = tier.capacity * tier.unit
    const state = this.gcra.get(i)
    if (state === undefined) return full
    return Math.min(full, state.credit + (now - state.last))
  }

  /** the estimated count over the moving window, multiplied by the period (an integer) */
  private used(i: number, now: number): number {
    const per = this.tiers[i]!.unit
    const w = Math.floor(now / per)
    let cur = 0
    let prev = 0
    for (const entry of this.log) {
      const ew = Math.floor(entry.t / per)
      if (ew === w) cur += entry.cost
      else if (ew === w - 1) prev += entry.cost
    }
    return prev * (per - (now - w * per)) + cur * per
  }

  private slidingRemaining(i: number, now: number): number {
    const tier = this.tiers[i]!
    return Math.max(0, Math.floor((tier.capacity * tier.unit - this.used(i, now)) / tier.unit))
  }

  /** Decides without consuming. */
  peek(
    now: number,
    cost: number
  ): { allowed: boolean; tiers: Array<{ allowed: boolean; remaining: number }> } {
    const tiers = this.tiers.map((tier, i) => {
      if (tier.algorithm === "gcra") {
        const credit = this.credit(i, now)
        return { allowed: credit >= cost * tier.unit, remaining: Math.floor(credit / tier.unit) }
      }
      const used = this.used(i, now)
      return {
        allowed: used + cost * tier.unit <= tier.capacity * tier.unit,
        remaining: this.slidingRemaining(i, now)
      }
    })
    return { allowed: tiers.every((t) => t.allowed), tiers }
  }

  /** Decides and, when every tier admits, consumes; remaining is reported after consumption. */
  check(now: number, cost: number) {
    const result = this.peek(now, cost)
    if (!result.allowed) return result
    this.tiers.forEach((tier, i) => {
      if (tier.algorithm === "gcra") {
        this.gcra.set(i, { credit: this.credit(i, now) - cost * tier.unit, last: now })
      }
    })
    this.log.push({ t: now, cost })
    return {
      allowed: true,
      tiers: this.tiers.map((tier, i) =>
        tier.algorithm === "gcra"
          ? { allowed: true, remaining: Math.floor(this.credit(i, now) / tier.unit) }
          : { allowed: true, remaining: this.slidingRemaining(i, now) }
      )
    }
  }
}

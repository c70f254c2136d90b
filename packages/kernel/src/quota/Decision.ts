/**
 * A check's verdict read from its tiers' decisions, as the quota service reports it and as its
 * local fallback learns from it: which tier refused, how long to wait, what to answer when the
 * store could not be asked, and how long a fallback should deny a client the store has just
 * seen exhausted (so a fleet falling back does not hand out a quota the store saw spent).
 *
 * @since 0.2.0
 */
import type { CompiledPlan, StoreResult, TierDecision } from "./Plan.js"

/**
 * The first tier that denies, if any: the tier a refusal is reported under.
 *
 * @since 0.2.0
 */
export const deniedBy = (tiers: ReadonlyArray<TierDecision>): TierDecision | undefined => {
  for (const tier of tiers) if (!tier.allowed) return tier
  return undefined
}

/**
 * How long until every denying tier admits: the longest wait among them (0 when none denies,
 * `Infinity` when a cost exceeds a tier's capacity).
 *
 * @since 0.2.0
 */
export const retryAfterMs = (tiers: ReadonlyArray<TierDecision>): number => {
  let wait = 0
  for (const tier of tiers) if (!tier.allowed && tier.retryAfterMs > wait) wait = tier.retryAfterMs
  return wait
}

/**
 * The decisions reported when the store could not be asked (fail-open or fail-closed): every
 * tier admits with its whole capacity remaining, or denies with `retryAfterMs`.
 *
 * @since 0.2.0
 */
export const unknownTiers = (
  plan: CompiledPlan,
  allowed: boolean,
  retryAfterMs: number
): Array<TierDecision> =>
  plan.tiers.map((tier) => ({
    tier: tier.name,
    algorithm: tier.algorithm,
    allowed,
    limit: tier.capacity,
    windowMs: tier.windowMs,
    remaining: allowed ? tier.capacity : 0,
    resetMs: 0,
    retryAfterMs: allowed ? 0 : retryAfterMs
  }))

/**
 * How long a local fallback should deny a client after an admission that left a gcra tier
 * empty: its next unit is at most one emission interval (`ceil(period / limit)`) away. 0: no
 * tier was left empty.
 *
 * @since 0.2.0
 */
export const emptyWaitMs = (plan: CompiledPlan, result: StoreResult): number => {
  const tiers = result.tiers
  let wait = 0
  for (let i = 0; i < tiers.length; i++) {
    if (tiers[i]!.remaining !== 0 || tiers[i]!.algorithm !== "gcra") continue
    const tier = plan.tiers[i]!
    const interval = Math.ceil(tier.periodMs / tier.limit)
    if (interval > wait) wait = interval
  }
  return wait
}

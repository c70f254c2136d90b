/**
 * A check's verdict read from its tiers' decisions, as the quota service reports it and as its
 * local fallback learns from it: which tier refused, how long to wait, what to answer when the
 * store could not be asked (the failure modes), how long a caller willing to wait sleeps, which
 * late store answers are refunded, and how long a fallback should deny a client the store has
 * just seen exhausted (so a fleet falling back does not hand out a quota the store saw spent).
 *
 * @since 0.2.0
 */
import type { FailureMode } from "./QuotaOptions.js"
import type { CompiledPlan, StoreResult, TierDecision } from "./QuotaPlan.js"

/**
 * What decided a check: the store, or (when the store failed or missed its deadline) the
 * failure mode.
 *
 * @since 0.2.0
 */
export type Source = "store" | FailureMode

/**
 * A check's verdict: every tier's decision, the tier it is reported under and how long to wait.
 *
 * @since 0.2.0
 */
export interface Decision {
  readonly client: string
  readonly allowed: boolean
  readonly tiers: ReadonlyArray<TierDecision>
  /** the first tier that denied (undefined when allowed) */
  readonly deniedBy: TierDecision | undefined
  /** 0 when allowed; `Infinity` when the cost exceeds a tier's capacity */
  readonly retryAfterMs: number
  readonly source: Source
  /** While the client is blocked (`block`, a plan's `blockFor`): the time left, ms. */
  readonly blockedMs?: number | undefined
}

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

/**
 * A store's answer as the check's verdict.
 *
 * @since 0.2.0
 */
export const make = (client: string, result: StoreResult, source: Source): Decision =>
  result.allowed
    ? { client, allowed: true, tiers: result.tiers, deniedBy: undefined, retryAfterMs: 0, source }
    : result.blockedMs !== undefined && result.blockedMs > 0
      ? {
          client,
          allowed: false,
          tiers: result.tiers,
          deniedBy: deniedBy(result.tiers),
          retryAfterMs: retryAfterMs(result.tiers),
          source,
          blockedMs: result.blockedMs
        }
      : {
          client,
          allowed: false,
          tiers: result.tiers,
          deniedBy: deniedBy(result.tiers),
          retryAfterMs: retryAfterMs(result.tiers),
          source
        }

/**
 * The tier a refusal is reported under (in its event and its error): the one that denied, else
 * the first.
 *
 * @since 0.2.0
 */
export const reportedTier = (decision: Decision): TierDecision | undefined =>
  decision.deniedBy ?? decision.tiers[0]

/**
 * A denial as the quota service publishes it: the client, the tier it is reported under, the
 * wait, what decided and when (`at`, epoch milliseconds).
 *
 * @since 0.2.0
 */
export interface Denied {
  readonly _tag: "Denied"
  readonly client: string
  /** The tier the denial is reported under (see {@link reportedTier}). */
  readonly tier: string
  readonly retryAfterMs: number
  readonly source: Source
  readonly at: number
}

/**
 * The event of a denial decided at `at`.
 *
 * @since 0.2.0
 */
export const denied = (decision: Decision, at: number): Denied => ({
  _tag: "Denied",
  client: decision.client,
  tier: reportedTier(decision)?.tier ?? "",
  retryAfterMs: decision.retryAfterMs,
  source: decision.source,
  at
})

/**
 * What a refusal reports (the fields of a `QuotaExceeded`): the tier it is reported under, that
 * tier's limit and remaining units, the wait (`Infinity`: never) and the client.
 *
 * @since 0.2.0
 */
export const refusal = (
  decision: Decision
): {
  readonly tier: string
  readonly limit: number
  readonly remaining: number
  readonly retryAfterMs: number
  readonly client: string
} => {
  const tier = reportedTier(decision)!
  return {
    tier: tier.tier,
    limit: tier.limit,
    remaining: tier.remaining,
    retryAfterMs: decision.retryAfterMs,
    client: decision.client
  }
}

/**
 * The answer when the store failed or missed its deadline: a cost no tier can hold is denied
 * whatever the mode (as the store would); otherwise `fail-open` admits, `fail-closed` denies for
 * `failClosedMs`, and `fallback` asks the local fallback.
 *
 * @since 0.2.0
 */
export const whenStoreFails = (
  mode: FailureMode,
  plan: CompiledPlan,
  cost: number,
  failClosedMs: number,
  fallback: () => StoreResult
): { readonly source: Source; readonly result: StoreResult } => {
  if (cost > plan.maxCost) {
    return { source: "store", result: { allowed: false, tiers: unknownTiers(plan, false, Infinity), now: 0 } }
  }
  switch (mode) {
    case "fail-open":
      return { source: mode, result: { allowed: true, tiers: unknownTiers(plan, true, 0), now: 0 } }
    case "fail-closed":
      return {
        source: mode,
        result: { allowed: false, tiers: unknownTiers(plan, false, failClosedMs), now: 0 }
      }
    case "fallback":
      return { source: mode, result: fallback() }
  }
}

/**
 * How long a fail-closed denial asks to wait while the breaker is open: until it may half-open,
 * in whole milliseconds, at least 1.
 *
 * @since 0.2.0
 */
export const circuitOpenWaitMs = (untilHalfOpenMs: number): number => Math.max(1, Math.ceil(untilHalfOpenMs))

/**
 * How long a caller willing to wait until `deadlineAt` sleeps before checking again after a
 * denial at `now` (at least 1 ms), or `undefined`: the permit cannot come by then (or ever), so
 * the caller is refused now, not at its bound.
 *
 * @since 0.2.0
 */
export const waitMs = (now: number, deadlineAt: number, retryAfterMs: number): number | undefined =>
  !Number.isFinite(retryAfterMs) || now + retryAfterMs > deadlineAt ? undefined : Math.max(1, retryAfterMs)

/**
 * Whether a store answer that came after the check's deadline had been decided is given back
 * (refunded): the store counted the request (`cost` units admitted) but the caller was told no,
 * so the store counts only what callers got.
 *
 * @since 0.2.0
 */
export const refundsLate = (result: StoreResult, cost: number, toldAllowed: boolean): boolean =>
  cost > 0 && result.allowed && !toldAllowed

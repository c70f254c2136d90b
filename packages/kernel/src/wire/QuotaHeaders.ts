/**
 * The `RateLimit-Policy` and `RateLimit` headers of a quota decision (`RateLimit` for the
 * draft's syntax). Every policy item carries `w`, its window. An admitted request's
 * `RateLimit` lists every tier, `t` being when the tier is full again; a refusal's lists the
 * tiers that refused, `t` being the time until the request would pass, so `Retry-After` (the
 * longest of those) is never earlier than any `t` in it. A request that can never pass has no
 * time of admission: its `t` is left out.
 *
 * @since 0.2.0
 */
import type { TierDecision } from "../quota/QuotaPlan.js"
import type * as Headers from "./Headers.js"
import * as RateLimit from "./RateLimit.js"

/**
 * The two headers of a decision (its `allowed` and its tiers), under the header `names`; none
 * when it has no tiers.
 *
 * @since 0.2.0
 */
export const of = (
  decision: { readonly allowed: boolean; readonly tiers: ReadonlyArray<TierDecision> },
  names: Pick<Headers.HeaderNames, "rateLimitPolicy" | "rateLimit">
): Record<string, string> => {
  const tiers = decision.tiers
  if (tiers.length === 0) return {}
  const policy = tiers.map((t) => ({
    name: t.tier,
    limit: t.limit,
    remaining: t.remaining,
    windowMillis: t.windowMs
  }))
  const shown = decision.allowed ? tiers : tiers.filter((t) => !t.allowed)
  const items = shown.map((t) => {
    const reset = t.allowed ? t.resetMs : t.retryAfterMs
    return {
      name: t.tier,
      limit: t.limit,
      remaining: t.remaining,
      windowMillis: t.windowMs,
      ...(Number.isFinite(reset) ? { resetMillis: Math.max(0, reset) } : {})
    }
  })
  return {
    [names.rateLimitPolicy]: RateLimit.formatPolicy(policy),
    [names.rateLimit]: RateLimit.format(items)
  }
}

import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import * as Options from "@sluice/core/Options"
import type * as QC from "../QuotaConfig.js"
import type * as QS from "../QuotaStore.js"
import * as QuotaPlan from "@sluice/kernel/quota/Plan"

/** @internal */
export const Algorithm = Schema.Literal("gcra", "sliding-window")

/** @internal */
export type Algorithm = typeof Algorithm.Type

/** @internal */
export const TierName = Schema.String.pipe(
  Schema.filter((s) => s.length > 0 && s.length <= 64 && !/[{}\s]/.test(s), {
    message: (issue) =>
      `expected a tier name of 1-64 characters without spaces or braces, got ${JSON.stringify(issue.actual)}`
  })
)

/** @internal */
export const MAX_CAPACITY_TIMES_PERIOD = QuotaPlan.MAX_CAPACITY_TIMES_PERIOD

const WholeMillis = Options.PositiveDuration.pipe(
  Schema.filter(
    (d) => {
      const ms = Duration.toMillis(d)
      return Number.isInteger(ms) && ms >= 1
        ? true
        : `expected a whole number of milliseconds of at least 1 ms (quotas count time in milliseconds), got ${ms} ms`
    },
    { identifier: "WholeMillis" }
  )
)

/** @internal */
export const Tier = Schema.Struct({
  name: TierName,
  algorithm: Algorithm,
  limit: Options.PositiveInt,
  period: WholeMillis,
  burst: Schema.optional(Options.PositiveInt)
}).pipe(
  Schema.filter((tier) => {
    const capacity = Math.max(tier.limit, tier.burst ?? tier.limit)
    const product = capacity * Duration.toMillis(tier.period)
    return product <= MAX_CAPACITY_TIMES_PERIOD
      ? true
      : {
          path: ["period"],
          message: `limit (or burst) × period in ms must be at most 2^52 for exact arithmetic, got ${capacity} × ${Duration.toMillis(tier.period)}`
        }
  })
)

/** @internal */
export type Tier = typeof Tier.Type

/** @internal */
export const Plan = Schema.Struct({
  tiers: Schema.Array(Tier).pipe(
    Schema.filter((tiers) => (tiers.length > 0 ? true : "expected at least one tier")),
    Schema.filter(
      (tiers) => {
        const seen = new Set<string>()
        for (const tier of tiers) {
          if (seen.has(tier.name)) return `duplicate tier name ${JSON.stringify(tier.name)}`
          seen.add(tier.name)
        }
        return true
      },
      { identifier: "UniqueTierNames" }
    ),
    Schema.filter((tiers) =>
      tiers.every((tier) => tier.algorithm === "gcra" || tier.burst === undefined)
        ? true
        : "burst only applies to gcra tiers"
    )
  ),
  /**
   * When a request is denied, the client is blocked (every check denied, nothing counted) for
   * this long, like rate-limiter-flexible's `blockDuration`. Whole milliseconds. The denial that
   * starts the block reports at least the block as its wait.
   */
  blockFor: Schema.optional(WholeMillis)
})

/** @internal */
export type Plan = typeof Plan.Type

/** @internal */
export type PlanInput = typeof Plan.Encoded

/** @internal */
export const PlanFromJson = Schema.parseJson(Plan)

/** A tier flattened to plain integers, ready for the hot path. @internal */
export type CompiledTier = QC.CompiledTier

/** @internal */
export type CompiledPlan = QC.CompiledPlan

/** Validated by the Schema above: the kernel compiles it, the plan as decoded stays with it. @internal */
export const compile = (plan: Plan): CompiledPlan => ({
  plan,
  ...QuotaPlan.compile({
    tiers: plan.tiers.map((tier) => ({
      name: tier.name,
      algorithm: tier.algorithm,
      limit: tier.limit,
      periodMs: Duration.toMillis(tier.period),
      burst: tier.burst
    })),
    blockForMs: plan.blockFor === undefined ? 0 : Duration.toMillis(plan.blockFor)
  })
})

/** @internal */
export type TierDecision = QS.TierDecision

/** What a store answers for one check. @internal */
export type StoreResult = QS.StoreResult

/** @internal */
export class QuotaStoreError extends Schema.TaggedError<QuotaStoreError>("@sluice/quota/QuotaStoreError")(
  "QuotaStoreError",
  {
    store: Schema.String,
    reason: Schema.Literal("timeout", "unavailable", "error"),
    message: Schema.String
  }
) {}

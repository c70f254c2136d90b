import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import * as Options from "./options.js"

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
export const Tier = Schema.Struct({
  name: TierName,
  algorithm: Algorithm,
  limit: Options.PositiveInt,
  period: Options.PositiveDuration,
  burst: Schema.optional(Options.PositiveInt)
})

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
  )
})

/** @internal */
export type Plan = typeof Plan.Type

/** @internal */
export type PlanInput = typeof Plan.Encoded

/** @internal */
export const PlanFromJson = Schema.parseJson(Plan)

/** A tier flattened to plain numbers, ready for the hot path. @internal */
export interface CompiledTier {
  readonly name: string
  readonly algorithm: Algorithm
  /** gcra: burst (bucket size); sliding-window: the limit. */
  readonly capacity: number
  readonly limit: number
  readonly periodMs: number
  /** gcra: milliseconds per unit; sliding-window: unused (0). */
  readonly emissionMs: number
  readonly index: number
}

/** @internal */
export interface CompiledPlan {
  readonly plan: Plan
  readonly tiers: ReadonlyArray<CompiledTier>
  /** identifies the shape of the plan (tier names and algorithms) */
  readonly shape: string
  /** precomputed ARGV tail for the Redis script */
  readonly redisArgs: ReadonlyArray<string>
}

/** @internal */
export const compile = (plan: Plan): CompiledPlan => {
  const tiers = plan.tiers.map((tier, index): CompiledTier => {
    const periodMs = Duration.toMillis(tier.period)
    if (tier.algorithm === "gcra") {
      const capacity = tier.burst ?? tier.limit
      return {
        name: tier.name,
        algorithm: "gcra",
        capacity,
        limit: tier.limit,
        periodMs,
        emissionMs: periodMs / tier.limit,
        index
      }
    }
    return {
      name: tier.name,
      algorithm: "sliding-window",
      capacity: tier.limit,
      limit: tier.limit,
      periodMs,
      emissionMs: 0,
      index
    }
  })
  const redisArgs: Array<string> = [String(tiers.length)]
  for (const tier of tiers) {
    redisArgs.push(
      tier.algorithm === "gcra" ? "g" : "s",
      String(tier.capacity),
      String(Math.round(tier.periodMs * 1000)),
      String(tier.emissionMs * 1000)
    )
  }
  return {
    plan,
    tiers,
    shape: tiers.map((t) => `${t.name}/${t.algorithm}`).join(","),
    redisArgs
  }
}

/** @internal */
export interface TierDecision {
  readonly tier: string
  readonly algorithm: Algorithm
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  readonly resetMs: number
  readonly retryAfterMs: number
}

/** What a store answers for one check. @internal */
export interface StoreResult {
  readonly allowed: boolean
  readonly tiers: ReadonlyArray<TierDecision>
  /** the store's clock at decision time, epoch milliseconds (may be fractional) */
  readonly now: number
}

/** Added to a quotient before `floor` so that float noise does not lose a whole unit. @internal */
export const EPSILON = 1e-9

/** @internal */
export class QuotaStoreError extends Schema.TaggedError<QuotaStoreError>("@sluice/core/QuotaStoreError")(
  "QuotaStoreError",
  {
    store: Schema.String,
    reason: Schema.Literal("timeout", "unavailable", "error"),
    message: Schema.String
  }
) {}

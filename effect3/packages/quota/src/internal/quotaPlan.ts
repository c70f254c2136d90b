import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import * as Options from "@sluice/core/Options"
import type * as QC from "../QuotaConfig.js"
import type { Issue } from "@sluice/kernel/options/Field"
import { describeIssues } from "@sluice/kernel/quota/QuotaOptions"
import * as QuotaPlan from "@sluice/kernel/quota/QuotaPlan"

/** @internal */
export const Algorithm = Schema.Literal("gcra", "sliding-window")

/** @internal */
export type Algorithm = typeof Algorithm.Type

interface Fields {
  readonly name: string
  readonly algorithm: Algorithm
  readonly limit: number
  readonly period: Duration.Duration
  readonly burst?: number | undefined
}

const tierSpec = (tier: Fields): QuotaPlan.TierSpec => ({
  name: tier.name,
  algorithm: tier.algorithm,
  limit: tier.limit,
  periodMs: Duration.toMillis(tier.period),
  burst: tier.burst
})

/** A plan as the kernel reads it: periods and `blockFor` in milliseconds. @internal */
export const toSpec = (plan: {
  readonly tiers: ReadonlyArray<Fields>
  readonly blockFor?: Duration.Duration | undefined
}): QuotaPlan.PlanSpec => ({
  tiers: plan.tiers.map(tierSpec),
  blockForMs: plan.blockFor === undefined ? undefined : Duration.toMillis(plan.blockFor)
})

// The Schemas read the fields (a duration as a `Duration`); the rules they must follow (names,
// positive integers, whole milliseconds, the 2^52 bound) are the kernel's `QuotaPlan.issues`.

/** @internal */
export const Tier = Schema.Struct({
  name: Schema.String,
  algorithm: Algorithm,
  limit: Schema.Number,
  period: Options.DurationInput,
  burst: Schema.optional(Schema.Number)
}).pipe(Schema.filter((tier) => QuotaPlan.tierIssues(tierSpec(tier))))

/** @internal */
export type Tier = typeof Tier.Type

/** @internal */
export const Plan = Schema.Struct({
  tiers: Schema.Array(Tier),
  /**
   * When a request is denied, the client is blocked (every check denied, nothing counted) for
   * this long, like rate-limiter-flexible's `blockDuration`. Whole milliseconds. The denial that
   * starts the block reports at least the block as its wait.
   */
  blockFor: Schema.optional(Options.DurationInput)
}).pipe(Schema.filter((plan) => QuotaPlan.issues(toSpec(plan))))

/** @internal */
export type Plan = typeof Plan.Type

/** @internal */
export type PlanInput = typeof Plan.Encoded

/** @internal */
export const PlanFromJson = Schema.parseJson(Plan)

/** Validated by the Schema above: the kernel compiles it, the plan as decoded stays with it. @internal */
export const compile = (plan: Plan): QC.CompiledPlan => ({ plan, ...QuotaPlan.compile(toSpec(plan)) })

/** The kernel's issues with a module's options as its `InvalidOptions`, a line per field. @internal */
export const invalidOptions = (module: string, issues: ReadonlyArray<Issue>): Options.InvalidOptions =>
  new Options.InvalidOptions({ module, message: `${module}: invalid options\n${describeIssues(issues)}` })

/** @internal */
export class QuotaStoreError extends Schema.TaggedError<QuotaStoreError>("@sluice/quota/QuotaStoreError")(
  "QuotaStoreError",
  {
    store: Schema.String,
    reason: Schema.Literal("timeout", "unavailable", "error"),
    message: Schema.String
  }
) {}

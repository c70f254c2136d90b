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
  /** the same in microseconds, as the Redis script gets them */
  readonly periodUs: number
  readonly emissionUs: number
  readonly index: number
  /** where the tier's state starts in a client's flat state (gcra: 1 number, sliding-window: 3) */
  readonly offset: number
}

/** Numbers of state per tier: gcra its theoretical arrival time; sliding-window window, current, previous. @internal */
export const stateSize = (algorithm: Algorithm): number => (algorithm === "gcra" ? 1 : 3)

/** @internal */
export interface CompiledPlan {
  readonly plan: Plan
  readonly tiers: ReadonlyArray<CompiledTier>
  /** identifies the shape of the plan (tier names and algorithms) */
  readonly shape: string
  /** how many numbers of state a client holds for this plan */
  readonly stateSize: number
  /**
   * The Redis script's arguments after `numkeys` and the key: cost (a placeholder
   * at index 0, overwritten per call), then per tier its capacity and its emission
   * interval (gcra) or period (sliding-window) in microseconds.
   */
  readonly redisArgs: ReadonlyArray<string>
}

/** @internal */
export const compile = (plan: Plan): CompiledPlan => {
  let offset = 0
  const tiers = plan.tiers.map((tier, index): CompiledTier => {
    const periodMs = Duration.toMillis(tier.period)
    const at = offset
    offset += stateSize(tier.algorithm)
    if (tier.algorithm === "gcra") {
      const capacity = tier.burst ?? tier.limit
      return {
        name: tier.name,
        algorithm: "gcra",
        capacity,
        limit: tier.limit,
        periodMs,
        emissionMs: periodMs / tier.limit,
        periodUs: Math.round(periodMs * 1000),
        emissionUs: (periodMs / tier.limit) * 1000,
        index,
        offset: at
      }
    }
    return {
      name: tier.name,
      algorithm: "sliding-window",
      capacity: tier.limit,
      limit: tier.limit,
      periodMs,
      emissionMs: 0,
      periodUs: Math.round(periodMs * 1000),
      emissionUs: 0,
      index,
      offset: at
    }
  })
  // per call, the Redis script gets: cost (a placeholder here, overwritten per call), then per
  // tier its capacity and its emission interval (gcra) or period (sliding-window) in µs
  // (as strings, so the client does not convert them on every call)
  const redisArgs: Array<string> = ["1"]
  for (const tier of tiers)
    redisArgs.push(String(tier.capacity), String(tier.algorithm === "gcra" ? tier.emissionUs : tier.periodUs))
  return {
    plan,
    tiers,
    shape: tiers.map((t) => `${t.name}/${t.algorithm}`).join(","),
    stateSize: offset,
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

/*
 * The algorithms, on a client's flat state (numbers only), in any time unit
 * (milliseconds for the memory store, microseconds for Redis, whose Lua script
 * runs the same formulas in the same order, so both decide alike):
 *
 * - gcra: `tat`, the theoretical arrival time. A request of `cost` units passes
 *   if `max(tat, now) + cost × em − capacity × em <= now` (em: time per unit);
 *   admitting it sets `tat = max(tat, now) + cost × em`.
 * - sliding-window (the sliding-window counter): fixed windows of `period`
 *   numbered `w = floor(now / period)`; the state is `w`, the units admitted in
 *   window `w` (`c`) and in window `w - 1` (`p`). The count over the moving window
 *   is estimated as `p × (period − elapsed) / period + c`, elapsed being the time
 *   since window `w` began: the previous window weighted by how much of it the
 *   moving window still covers. A request passes if the estimate plus `cost` is
 *   at most the limit (compared multiplied through by `period`, exact in
 *   integers). O(1) memory per client and tier.
 */

/** Rolls one client's state forward to `now` in place and says whether every tier admits `cost`; `ok[i]` per tier. @internal */
export const roll = (
  tiers: ReadonlyArray<CompiledTier>,
  state: Array<number>,
  cost: number,
  now: number,
  micros: boolean,
  ok: Array<boolean>
): boolean => {
  let all = true
  for (let i = 0; i < tiers.length; i++) {
    const tier = tiers[i]!
    const o = tier.offset
    let pass: boolean
    if (tier.algorithm === "gcra") {
      const em = micros ? tier.emissionUs : tier.emissionMs
      let tat = state[o]!
      if (tat < now) tat = now
      state[o] = tat
      pass = tat + cost * em - tier.capacity * em <= now
    } else {
      const per = micros ? tier.periodUs : tier.periodMs
      const w = Math.floor(now / per)
      const sw = state[o]!
      let c = 0
      let p = 0
      if (sw === w) {
        c = state[o + 1]!
        p = state[o + 2]!
      } else if (sw === w - 1) p = state[o + 1]!
      state[o] = w
      state[o + 1] = c
      state[o + 2] = p
      pass = p * (per - (now - w * per)) + (c + cost) * per <= tier.capacity * per
    }
    ok[i] = pass
    if (!pass) all = false
  }
  return all
}

/**
 * The decisions of every tier from a client's state rolled to `now` (before
 * consumption), whether the request was admitted (`all`) and each tier's verdict.
 * Times in the state are milliseconds, or microseconds when `micros`.
 *
 * @internal
 */
export const decide = (
  tiers: ReadonlyArray<CompiledTier>,
  state: ArrayLike<number>,
  cost: number,
  now: number,
  micros: boolean,
  all: boolean,
  ok: ArrayLike<boolean>
): Array<TierDecision> => {
  const u = micros ? 1000 : 1
  const decisions: Array<TierDecision> = new Array(tiers.length)
  for (let i = 0; i < tiers.length; i++) {
    const tier = tiers[i]!
    const o = tier.offset
    const pass = ok[i]!
    const cap = tier.capacity
    if (tier.algorithm === "gcra") {
      const em = micros ? tier.emissionUs : tier.emissionMs
      const tat = state[o]!
      const tau = cap * em
      const newTat = tat + cost * em
      const at = all ? newTat : tat
      const remaining = Math.floor((tau - (at - now)) / em + EPSILON)
      decisions[i] = {
        tier: tier.name,
        algorithm: "gcra",
        allowed: pass,
        limit: cap,
        remaining: remaining < 0 ? 0 : remaining,
        resetMs: Math.ceil((at - now) / u),
        retryAfterMs: pass ? 0 : Math.ceil((newTat - tau - now) / u)
      }
    } else {
      const per = micros ? tier.periodUs : tier.periodMs
      const ws = state[o]! * per
      const p = state[o + 2]!
      const c = all ? state[o + 1]! + cost : state[o + 1]!
      const remaining = Math.floor((cap * per - p * (per - (now - ws)) - c * per) / per)
      const reset = c > 0 ? ws + 2 * per - now : p > 0 ? ws + per - now : 0
      let retryAfterMs = 0
      if (!pass) {
        // the estimate only falls (continuously, also across a window boundary) until the
        // request fits: within this window while the previous one fades out, else in the next
        const r = cap - c - cost
        const at =
          r >= 0
            ? ws + per - Math.floor((r * per) / p)
            : cap >= cost
              ? ws + 2 * per - Math.floor(((cap - cost) * per) / c)
              : now + reset
        retryAfterMs = Math.ceil((at - now) / u)
      }
      decisions[i] = {
        tier: tier.name,
        algorithm: "sliding-window",
        allowed: pass,
        limit: cap,
        remaining: remaining < 0 ? 0 : remaining,
        resetMs: Math.ceil(reset / u),
        retryAfterMs
      }
    }
  }
  return decisions
}

/** Consumes `cost` from every tier of a rolled state (after `roll` said all pass). @internal */
export const consume = (
  tiers: ReadonlyArray<CompiledTier>,
  state: Array<number>,
  cost: number,
  micros: boolean
): void => {
  for (let i = 0; i < tiers.length; i++) {
    const tier = tiers[i]!
    if (tier.algorithm === "gcra") state[tier.offset] += cost * (micros ? tier.emissionUs : tier.emissionMs)
    else state[tier.offset + 1] += cost
  }
}

/** When a (not necessarily rolled) state is full again on every tier, in its time unit. @internal */
export const fullAt = (tiers: ReadonlyArray<CompiledTier>, state: ArrayLike<number>): number => {
  let until = -Infinity
  for (let i = 0; i < tiers.length; i++) {
    const tier = tiers[i]!
    const o = tier.offset
    let t: number
    if (tier.algorithm === "gcra") t = state[o]!
    else
      t =
        state[o + 1]! > 0
          ? (state[o]! + 2) * tier.periodMs
          : state[o + 2]! > 0
            ? (state[o]! + 1) * tier.periodMs
            : -Infinity
    if (t > until) until = t
  }
  return until
}

/** The initial state of a tier (as if the client were new). @internal */
export const initState = (tier: CompiledTier, state: Array<number>): void => {
  const o = tier.offset
  if (tier.algorithm === "gcra") state[o] = 0
  else {
    state[o] = -Infinity
    state[o + 1] = 0
    state[o + 2] = 0
  }
}

/** @internal */
export class QuotaStoreError extends Schema.TaggedError<QuotaStoreError>("@sluice/core/QuotaStoreError")(
  "QuotaStoreError",
  {
    store: Schema.String,
    reason: Schema.Literal("timeout", "unavailable", "error"),
    message: Schema.String
  }
) {}

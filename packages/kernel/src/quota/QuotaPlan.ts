/**
 * Tiered quota plans, compiled to plain integers, and the arithmetic every quota store decides
 * with: exact GCRA (the generic cell rate algorithm of ITU-T I.371, the token bucket's
 * equivalent, with its theoretical arrival time kept as a whole millisecond and a remainder)
 * and the sliding-window counter (two fixed windows, the previous one weighted by the share the
 * moving window still covers, as Cloudflare's and Redis' rate limiters count), a request's
 * `cost`, a plan's `blockFor` and the per-tier decisions an HTTP layer turns into `RateLimit`
 * and `Retry-After` headers. A request passes only if every tier admits it; a denied request
 * consumes nothing.
 *
 * Every quantity is an integer in whole milliseconds below 2^53 (see
 * {@link MAX_CAPACITY_TIMES_PERIOD}), so decisions are exact at any clock magnitude and the
 * memory store, the Redis script (whose Lua numbers are doubles) and a BigInt reference decide
 * alike, decision for decision. The binding validates a plan (tier names, whole milliseconds,
 * the 2^52 bound) before {@link compile} sees it.
 *
 * @since 0.2.0
 */
import type { Issue } from "../options/Field.js"
import * as Ratio from "../stats/Ratio.js"

/**
 * The algorithm of a tier.
 *
 * @since 0.2.0
 */
export type Algorithm = "gcra" | "sliding-window"

/**
 * The largest `capacity × period` (period in whole milliseconds) a tier may have: every
 * quantity the arithmetic forms is an integer of at most this magnitude (or twice it), so it is
 * exact in a double (and in Redis' Lua, whose numbers are doubles). 2^52 admits, e.g.,
 * 1,000,000,000 per hour with a burst of 1,000,000,000 (3.6e15).
 *
 * @since 0.2.0
 */
export const MAX_CAPACITY_TIMES_PERIOD = 2 ** 52

/**
 * One tier as validated by the binding: `limit` units per `periodMs` (a whole number of
 * milliseconds, at least 1), `burst` (gcra only: the bucket, default `limit`).
 *
 * @since 0.2.0
 */
export interface TierSpec {
  readonly name: string
  readonly algorithm: Algorithm
  readonly limit: number
  readonly periodMs: number
  readonly burst?: number | undefined
}

/**
 * A validated plan: its tiers (at least one, unique names) and `blockForMs` (a denied client is
 * blocked that long, whole milliseconds; 0 or absent: never).
 *
 * @since 0.2.0
 */
export interface PlanSpec {
  readonly tiers: ReadonlyArray<TierSpec>
  readonly blockForMs?: number | undefined
}

const positiveInt = (n: number): boolean => Number.isInteger(n) && n > 0

const wholeMsIssue = (path: string, ms: number): Array<Issue> =>
  Number.isInteger(ms) && ms >= 1
    ? []
    : [
        {
          path: [path],
          message: `expected a whole number of milliseconds of at least 1 ms (quotas count time in milliseconds), got ${ms} ms`
        }
      ]

/**
 * The issues of one tier, each naming its field: a name of 1-64 characters without spaces or
 * braces (it is part of a Redis key's hash tag and of a header), `limit` and `burst` positive
 * integers, `periodMs` a whole number of milliseconds of at least 1, and capacity × period at
 * most {@link MAX_CAPACITY_TIMES_PERIOD}.
 *
 * @since 0.2.0
 */
export const tierIssues = (tier: TierSpec): Array<Issue> => {
  const found: Array<Issue> = []
  if (!(tier.name.length > 0 && tier.name.length <= 64 && !/[{}\s]/.test(tier.name))) {
    found.push({
      path: ["name"],
      message: `expected a tier name of 1-64 characters without spaces or braces, got ${JSON.stringify(tier.name)}`
    })
  }
  if (!positiveInt(tier.limit)) {
    found.push({ path: ["limit"], message: `expected a positive integer, got ${String(tier.limit)}` })
  }
  if (tier.burst !== undefined && !positiveInt(tier.burst)) {
    found.push({ path: ["burst"], message: `expected a positive integer, got ${String(tier.burst)}` })
  }
  found.push(...wholeMsIssue("period", tier.periodMs))
  if (found.length === 0) {
    const capacity = Math.max(tier.limit, tier.burst ?? tier.limit)
    if (capacity * tier.periodMs > MAX_CAPACITY_TIMES_PERIOD) {
      found.push({
        path: ["period"],
        message: `limit (or burst) × period in ms must be at most 2^52 for exact arithmetic, got ${capacity} × ${tier.periodMs}`
      })
    }
  }
  return found
}

/**
 * The issues of a plan, each naming its field: at least one tier, unique tier names, `burst`
 * only on gcra tiers, `blockForMs` (when given) a whole number of milliseconds of at least 1, and
 * every tier's own ({@link tierIssues}, under `tiers`).
 *
 * @since 0.2.0
 */
export const issues = (plan: PlanSpec): Array<Issue> => {
  const found: Array<Issue> = []
  plan.tiers.forEach((tier, i) => {
    for (const issue of tierIssues(tier)) found.push({ ...issue, path: ["tiers", String(i), ...issue.path] })
  })
  if (plan.tiers.length === 0) found.push({ path: ["tiers"], message: "expected at least one tier" })
  const seen = new Set<string>()
  for (const tier of plan.tiers) {
    if (seen.has(tier.name))
      found.push({ path: ["tiers"], message: `duplicate tier name ${JSON.stringify(tier.name)}` })
    seen.add(tier.name)
  }
  if (!plan.tiers.every((tier) => tier.algorithm === "gcra" || tier.burst === undefined)) {
    found.push({ path: ["tiers"], message: "burst only applies to gcra tiers" })
  }
  if (plan.blockForMs !== undefined) found.push(...wholeMsIssue("blockFor", plan.blockForMs))
  return found
}

/**
 * A tier flattened to plain integers, ready for the hot path.
 *
 * @since 0.2.0
 */
export interface CompiledTier {
  readonly name: string
  readonly algorithm: Algorithm
  /** gcra: burst (bucket size); sliding-window: the limit. */
  readonly capacity: number
  readonly limit: number
  /** whole milliseconds */
  readonly periodMs: number
  /** capacity × period */
  readonly capacityPeriod: number
  /**
   * The window the tier's `limit` (capacity) is counted over, as `RateLimit-Policy`'s `w`:
   * sliding-window its period; gcra the time to refill the whole bucket, `ceil(burst × period /
   * limit)`, so that q / w is the rate and `remaining` never exceeds q.
   */
  readonly windowMs: number
  readonly index: number
  /** where the tier's state starts in a client's flat state (gcra: 2 numbers, sliding-window: 3) */
  readonly offset: number
}

/**
 * A plan flattened for the stores' hot path.
 *
 * @since 0.2.0
 */
export interface CompiledPlan {
  readonly tiers: ReadonlyArray<CompiledTier>
  /** identifies the shape of the plan (tier names and algorithms) */
  readonly shape: string
  /** how many numbers of state a client holds for this plan */
  readonly stateSize: number
  /** the smallest capacity: a cost above it can never be admitted */
  readonly maxCost: number
  /** milliseconds a client is blocked after a denial (0: never) */
  readonly blockForMs: number
  /**
   * The Redis script's arguments after `numkeys` and the key: cost (a placeholder at index 0,
   * overwritten per call), the block duration, then per tier its capacity, period (ms) and
   * limit.
   */
  readonly redisArgs: ReadonlyArray<string>
}

/**
 * The answer of one tier: whether it admits the request, its limit (the bucket size for
 * `gcra`), the units remaining, milliseconds until it is full again (`resetMs`), when it
 * denies, milliseconds until the request would pass (`retryAfterMs`, exact; `Infinity` when the
 * cost exceeds the tier's capacity), and `windowMs`, the window `limit` is counted over.
 *
 * @since 0.2.0
 */
export interface TierDecision {
  readonly tier: string
  readonly algorithm: Algorithm
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  readonly resetMs: number
  readonly retryAfterMs: number
  /** the window `limit` is counted over (see {@link CompiledTier.windowMs}) */
  readonly windowMs: number
}

/**
 * What a store answers for one check: all tiers, and the store's clock (epoch ms) at decision
 * time.
 *
 * @since 0.2.0
 */
export interface StoreResult {
  readonly allowed: boolean
  readonly tiers: ReadonlyArray<TierDecision>
  /** the store's clock at decision time, epoch milliseconds (whole) */
  readonly now: number
  /** when the client is blocked: milliseconds until the block ends (else 0) */
  readonly blockedMs?: number | undefined
  /**
   * A remote store's answer may carry the client's state after the check, exact, in the plan's
   * layout (see {@link stateSize}: gcra `t, r`, sliding-window `window, current, previous`), so
   * a local fallback holds what the store saw spent and can give it back to a store that lost it.
   */
  readonly state?: ReadonlyArray<number> | undefined
  /** the store had lost (part of) the client's state and took the floor sent with the check */
  readonly raised?: boolean | undefined
}

/**
 * Numbers of state per tier. gcra: the theoretical arrival time `tat = t + r / limit` ms as its
 * whole part `t` and the remainder `r` in [0, limit) (the emission interval `period / limit`
 * need not be a whole number of anything, so `tat` is kept as an exact fraction);
 * sliding-window: window, current, previous.
 *
 * @since 0.2.0
 */
export const stateSize = (algorithm: Algorithm): number => (algorithm === "gcra" ? 2 : 3)

/**
 * Flattens a validated plan for the stores.
 *
 * @since 0.2.0
 */
export const compile = (plan: PlanSpec): CompiledPlan => {
  let offset = 0
  let maxCost = Infinity
  const tiers = plan.tiers.map((tier, index): CompiledTier => {
    const periodMs = tier.periodMs
    const at = offset
    offset += stateSize(tier.algorithm)
    const capacity = tier.algorithm === "gcra" ? (tier.burst ?? tier.limit) : tier.limit
    if (capacity < maxCost) maxCost = capacity
    return {
      name: tier.name,
      algorithm: tier.algorithm,
      capacity,
      limit: tier.limit,
      periodMs,
      capacityPeriod: capacity * periodMs,
      windowMs: tier.algorithm === "gcra" ? ceilDiv(capacity * periodMs, tier.limit) : periodMs,
      index,
      offset: at
    }
  })
  const blockForMs = plan.blockForMs ?? 0
  // as strings, so the client does not convert them on every call
  const redisArgs: Array<string> = ["1", String(blockForMs)]
  for (const tier of tiers) redisArgs.push(String(tier.capacity), String(tier.periodMs), String(tier.limit))
  return {
    tiers,
    shape: tiers.map((t) => `${t.name}/${t.algorithm}`).join(","),
    stateSize: offset,
    maxCost,
    blockForMs,
    redisArgs
  }
}

/**
 * A plan scaled by a share in (0, 1] (each tier's limit and burst, floored, at least 1), for a
 * local fallback that holds a share of the quota. Exact: 100 × 0.29 is 29 as written
 * (28.999999999999996 in floating point). The share 1 returns the plan itself.
 *
 * @since 0.2.0
 */
export const scale = <P extends CompiledPlan>(plan: P, share: number): P => {
  if (share === 1) return plan
  const exact = Ratio.make(share)
  let maxCost = Infinity
  const tiers = plan.tiers.map((tier): CompiledTier => {
    const capacity = Math.max(1, exact.floorTimes(tier.capacity))
    const limit = Math.max(1, exact.floorTimes(tier.limit))
    if (capacity < maxCost) maxCost = capacity
    const capacityPeriod = capacity * tier.periodMs
    const windowMs = tier.algorithm === "gcra" ? Math.ceil(capacityPeriod / limit) : tier.periodMs
    return { ...tier, capacity, limit, capacityPeriod, windowMs }
  })
  return { ...plan, tiers, maxCost }
}

/**
 * `floor(a / b)` for integers (b > 0) whose magnitudes, and `|a| + b`, are below 2^53: the
 * double quotient can round up across an integer; the remainder, exact, corrects it.
 *
 * @since 0.2.0
 */
export const floorDiv = (a: number, b: number): number => {
  let q = Math.floor(a / b)
  const m = a - q * b
  if (m < 0) q -= 1
  else if (m >= b) q += 1
  return q
}

/** `ceil(a / b)` for integers, as {@link floorDiv}. @since 0.2.0 */
export const ceilDiv = (a: number, b: number): number => -floorDiv(-a, b)

/*
 * The algorithms, in whole milliseconds (the memory store floors its Clock, Redis floors `TIME`)
 * and integers only, so every decision is exact at any clock magnitude (the Redis script runs the
 * same integer formulas):
 *
 * - gcra, for `limit` units per `period` P with bucket `capacity` C: the emission interval is
 *   P / limit. The state is `tat`, the theoretical arrival time, kept exactly as `t + r / limit`.
 *   At `now`, the debt `d = (max(tat, now) − now) × limit` (an integer, at most C × P) is how far
 *   ahead of `now` the client is, in units of 1/limit ms. A request of `cost` units passes if
 *   `d + cost × P <= C × P`; admitting it makes the debt `d + cost × P`. Remaining:
 *   `floor((C × P − debt) / P)`; full again (reset) after `ceil(debt / limit)` ms; a denied request
 *   passes after `ceil((d + cost × P − C × P) / limit)` ms.
 * - sliding-window (the sliding-window counter): fixed windows of P numbered `w = floor(now / P)`;
 *   the state is `w`, the units admitted in window `w` (`c`) and in `w − 1` (`p`). The count over
 *   the moving window is `p × (P − elapsed) / P + c`; a request passes if that plus `cost` is at
 *   most the limit, compared multiplied through by P (`p × (P − elapsed) <= (C − c − cost) × P`).
 *   O(1) memory per client and tier.
 */

/** One tier's state rolled to `now`, as a decision needs it. @since 0.2.0 */
export interface TierView {
  /** gcra: the debt d; sliding-window: units in the current window */
  a: number
  /** sliding-window: units in the previous window */
  b: number
  /** sliding-window: the current window's start (ms) */
  start: number
}

/** Rolls a gcra state (t, r at `o`) to `now` and returns the debt. @since 0.2.0 */
export const gcraDebt = (tier: CompiledTier, state: Array<number>, now: number): number => {
  const o = tier.offset
  const t = state[o]!
  if (t < now) {
    state[o] = now
    state[o + 1] = 0
    return 0
  }
  return (t - now) * tier.limit + state[o + 1]!
}

/** Rolls a sliding-window state to `now`'s window in place. @since 0.2.0 */
export const slidingRoll = (tier: CompiledTier, state: Array<number>, now: number): void => {
  const o = tier.offset
  const w = Math.floor(now / tier.periodMs)
  const sw = state[o]!
  if (sw === w) return
  state[o + 2] = sw === w - 1 ? state[o + 1]! : 0
  state[o + 1] = 0
  state[o] = w
}

/** Whether a tier admits `cost` given its rolled view. @since 0.2.0 */
export const passes = (tier: CompiledTier, view: TierView, cost: number, now: number): boolean => {
  const cap = tier.capacity
  if (cost > cap) return false
  const per = tier.periodMs
  if (tier.algorithm === "gcra") return view.a <= (cap - cost) * per
  const room = cap - view.a - cost
  return room >= 0 && view.b * (per - (now - view.start)) <= room * per
}

/**
 * One tier's decision from its rolled view (before consumption). `consumed`: the request was
 * admitted and counted (so `remaining` and `resetMs` are after it).
 *
 * @since 0.2.0
 */
export const decideTier = (
  tier: CompiledTier,
  view: TierView,
  cost: number,
  now: number,
  pass: boolean,
  consumed: boolean
): TierDecision => {
  const cap = tier.capacity
  const per = tier.periodMs
  if (tier.algorithm === "gcra") {
    const debt = consumed ? view.a + cost * per : view.a
    const remaining = floorDiv(tier.capacityPeriod - debt, per)
    return {
      tier: tier.name,
      algorithm: "gcra",
      allowed: pass,
      limit: cap,
      windowMs: tier.windowMs,
      remaining: remaining < 0 ? 0 : remaining,
      resetMs: ceilDiv(debt, tier.limit),
      retryAfterMs: pass ? 0 : cost > cap ? Infinity : ceilDiv(view.a - (cap - cost) * per, tier.limit)
    }
  }
  const ws = view.start
  const p = view.b
  const c = consumed ? view.a + cost : view.a
  const remaining = floorDiv(tier.capacityPeriod - p * (per - (now - ws)) - c * per, per)
  const reset = c > 0 ? ws + 2 * per - now : p > 0 ? ws + per - now : 0
  let retryAfterMs = 0
  if (!pass) {
    // the estimate only falls (continuously, also across a window boundary) until the request
    // fits: within this window while the previous one fades out, else in the next
    const r = cap - view.a - cost
    retryAfterMs =
      cost > cap
        ? Infinity
        : r >= 0
          ? ws + per - floorDiv(r * per, p) - now
          : ws + 2 * per - floorDiv((cap - cost) * per, view.a) - now
  }
  return {
    tier: tier.name,
    algorithm: "sliding-window",
    allowed: pass,
    limit: cap,
    windowMs: tier.windowMs,
    remaining: remaining < 0 ? 0 : remaining,
    resetMs: reset,
    retryAfterMs
  }
}

/** Rolls a tier's state to `now` and fills `view`. @since 0.2.0 */
export const viewOf = (tier: CompiledTier, state: Array<number>, now: number, view: TierView): void => {
  if (tier.algorithm === "gcra") {
    view.a = gcraDebt(tier, state, now)
    view.b = 0
    view.start = 0
  } else {
    slidingRoll(tier, state, now)
    const o = tier.offset
    view.a = state[o + 1]!
    view.b = state[o + 2]!
    view.start = state[o]! * tier.periodMs
  }
}

/** Adds `units` to a tier's count (rolled to `now`), clamped to [0, capacity]. @since 0.2.0 */
export const adjustTier = (tier: CompiledTier, state: Array<number>, now: number, units: number): void => {
  const o = tier.offset
  if (tier.algorithm === "gcra") {
    let debt = gcraDebt(tier, state, now) + units * tier.periodMs
    if (debt < 0) debt = 0
    if (debt > tier.capacityPeriod) debt = tier.capacityPeriod
    const whole = floorDiv(debt, tier.limit)
    state[o] = now + whole
    state[o + 1] = debt - whole * tier.limit
  } else {
    slidingRoll(tier, state, now)
    let c = state[o + 1]! + units
    if (c < 0) c = 0
    if (c > tier.capacity) c = tier.capacity
    state[o + 1] = c
  }
}

/** Consumes `cost` from every tier of a rolled state (after every tier passed). @since 0.2.0 */
export const consume = (
  tiers: ReadonlyArray<CompiledTier>,
  state: Array<number>,
  cost: number,
  now: number
): void => {
  for (let i = 0; i < tiers.length; i++) {
    const tier = tiers[i]!
    const o = tier.offset
    if (tier.algorithm === "gcra") {
      const debt = (state[o]! - now) * tier.limit + state[o + 1]! + cost * tier.periodMs
      const whole = floorDiv(debt, tier.limit)
      state[o] = now + whole
      state[o + 1] = debt - whole * tier.limit
    } else state[o + 1]! += cost
  }
}

/** When a (not necessarily rolled) state is full again on every tier, in ms. @since 0.2.0 */
export const fullAt = (tiers: ReadonlyArray<CompiledTier>, state: ArrayLike<number>): number => {
  let until = -Infinity
  for (let i = 0; i < tiers.length; i++) {
    const tier = tiers[i]!
    const o = tier.offset
    let t: number
    if (tier.algorithm === "gcra") t = state[o + 1]! > 0 ? state[o]! + 1 : state[o]!
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

/** The initial state of a tier (as if the client were new). @since 0.2.0 */
export const initState = (tier: CompiledTier, state: Array<number>): void => {
  const o = tier.offset
  if (tier.algorithm === "gcra") {
    state[o] = -Infinity
    state[o + 1] = 0
  } else {
    state[o] = -Infinity
    state[o + 1] = 0
    state[o + 2] = 0
  }
}

/**
 * Decides every tier of a plan on a client's state at `now` (whole ms) and, when every tier
 * admits and `cost > 0`, consumes. Cost 0 is a peek: decided as a request of one unit, nothing
 * consumed. `blockedUntil`: the client is blocked until then (every tier denies).
 *
 * @since 0.2.0
 */
export const checkState = (
  state: Array<number>,
  plan: CompiledPlan,
  cost: number,
  now: number,
  blockedUntil: number
): StoreResult => {
  const tiers = plan.tiers
  const peek = cost === 0
  const k = peek ? 1 : cost
  const views: Array<TierView> = new Array(tiers.length)
  const ok: Array<boolean> = new Array(tiers.length)
  const blocked = blockedUntil > now
  let all = !blocked
  for (let i = 0; i < tiers.length; i++) {
    const view: TierView = { a: 0, b: 0, start: 0 }
    viewOf(tiers[i]!, state, now, view)
    views[i] = view
    const pass = passes(tiers[i]!, view, k, now)
    ok[i] = pass
    if (!pass) all = false
  }
  const consumed = all && !peek
  const decisions: Array<TierDecision> = new Array(tiers.length)
  for (let i = 0; i < tiers.length; i++)
    decisions[i] = decideTier(tiers[i]!, views[i]!, k, now, ok[i]!, consumed)
  if (consumed) consume(tiers, state, k, now)
  return blocked
    ? { allowed: false, tiers: blockTiers(decisions, blockedUntil - now), now, blockedMs: blockedUntil - now }
    : { allowed: all, tiers: decisions, now }
}

/**
 * The denial that starts a block of `blockMs` (a plan's `blockFor`): the tiers that denied it
 * report at least the block, so a client that waits what it is told is past the block (the
 * tier's own wait would end inside it and be refused again); the tiers that admitted it keep
 * their verdict, so the decision still names the tier that refused.
 *
 * @since 0.2.0
 */
export const startBlock = (result: StoreResult, blockMs: number): StoreResult => ({
  allowed: false,
  tiers: result.tiers.map((d) =>
    d.allowed || d.retryAfterMs >= blockMs ? d : { ...d, retryAfterMs: blockMs }
  ),
  now: result.now,
  blockedMs: blockMs
})

/** While blocked, every tier denies until the block ends (or later, if the tier says so). @since 0.2.0 */
export const blockTiers = (decisions: ReadonlyArray<TierDecision>, blockedMs: number): Array<TierDecision> =>
  decisions.map((d) => ({
    ...d,
    allowed: false,
    retryAfterMs: d.retryAfterMs > blockedMs ? d.retryAfterMs : blockedMs
  }))

/**
 * Raises a client's state (`into`, rolled or not) to at least `floor` (the same plan's layout),
 * tier by tier: the later gcra arrival time, the larger sliding-window counts once both are
 * rolled to the same window. Exact: merging a state with itself, or with an older state of the
 * same client, changes nothing. Answers whether anything was raised.
 *
 * @since 1.0.0
 */
export const raiseState = (
  tiers: ReadonlyArray<CompiledTier>,
  into: Array<number>,
  floor: ArrayLike<number>
): boolean => {
  let raised = false
  for (let i = 0; i < tiers.length; i++) {
    const o = tiers[i]!.offset
    if (tiers[i]!.algorithm === "gcra") {
      const ft = floor[o]!
      const fr = floor[o + 1]!
      const t = into[o]!
      if (ft > t || (ft === t && fr > into[o + 1]!)) {
        into[o] = ft
        into[o + 1] = fr
        raised = true
      }
    } else {
      let fw = floor[o]!
      let fc = floor[o + 1]!
      let fp = floor[o + 2]!
      if (fc === 0 && fp === 0) continue
      const w = into[o]!
      if (fw < w) {
        // the floor is older: rolled to the state's window
        fp = fw === w - 1 ? fc : 0
        fc = 0
        fw = w
      } else if (fw > w) {
        into[o + 2] = w === fw - 1 ? into[o + 1]! : 0
        into[o + 1] = 0
        into[o] = fw
      }
      if (fc > into[o + 1]!) {
        into[o + 1] = fc
        raised = true
      }
      if (fp > into[o + 2]!) {
        into[o + 2] = fp
        raised = true
      }
    }
  }
  return raised
}

/**
 * A client's state after a store's answer, rebuilt from the debts and counts it decided on
 * (before consumption, at `now`): gcra `t, r` of the debt after the check, sliding-window the
 * window and counts after it.
 *
 * @since 1.0.0
 */
export const stateAfter = (
  tiers: ReadonlyArray<CompiledTier>,
  views: ReadonlyArray<TierView>,
  size: number,
  cost: number,
  consumed: boolean,
  now: number
): Array<number> => {
  const state: Array<number> = new Array(size)
  for (let i = 0; i < tiers.length; i++) {
    const tier = tiers[i]!
    const view = views[i]!
    const o = tier.offset
    if (tier.algorithm === "gcra") {
      const debt = consumed ? view.a + cost * tier.periodMs : view.a
      const whole = floorDiv(debt, tier.limit)
      state[o] = now + whole
      state[o + 1] = debt - whole * tier.limit
    } else {
      state[o] = Math.floor(now / tier.periodMs)
      state[o + 1] = consumed ? view.a + cost : view.a
      state[o + 2] = view.b
    }
  }
  return state
}

/**
 * The local insurance quota behind a remote store: the memory store on the same plans, each
 * scaled by `share` (with N instances, `1 / N` keeps the fleet within the plan while the store is
 * away), deciding the checks the store could not answer in time.
 *
 * It learns from the store's answers, so a fleet that falls back (a slow or lost Redis) does not
 * hand out a quota the store already saw spent: an answer that carries the client's state (the
 * Redis store's do) raises the fallback's state to it — at the share: a client the store saw
 * spend half its plan has spent half of the fallback's — so once a denial's wait is over the
 * fallback admits what the store would (one emission interval's unit), not a fresh burst. An
 * answer without state teaches its denial (the client is denied until the store would admit
 * it) and an admission that left a gcra tier empty (denied for one emission interval).
 *
 * It also keeps the floor a store may have lost (a Redis restarted without persistence, a
 * replica promoted before the last writes reached it): per client the latest state the store
 * answered, plus what the fallback itself admitted meanwhile, in the store's units.
 * {@link Fallback.floor} is sent with each check; the store raises its state to it (the maximum,
 * never the sum), so a client is never admitted past its plan and the fallback's share across
 * the loss. With the share 1 the fallback's own state is that floor. Penalties, rewards, blocks
 * and resets reach it as they reach the store.
 *
 * @since 0.2.0
 */
import { emptyWaitMs, retryAfterMs } from "./Decision.js"
import { MemoryQuotaState } from "./MemoryStore.js"
import type { CompiledPlan, StoreResult } from "./Plan.js"
import { ceilDiv, scale } from "./Plan.js"

/**
 * `maxClients` bounds its memory; `share` in (0, 1] scales every plan's limit and burst.
 *
 * @since 0.2.0
 */
export interface FallbackOptions {
  readonly maxClients: number
  readonly share: number
}

/**
 * A local fallback. Time is the caller's `now` in whole milliseconds.
 *
 * @since 0.2.0
 */
export class Fallback {
  private readonly state: MemoryQuotaState
  /** the store's floor, on the store's plans: the fallback's own state when the share is 1 */
  private readonly floors: MemoryQuotaState
  private readonly scaled = new WeakMap<CompiledPlan, CompiledPlan>()

  constructor(readonly options: FallbackOptions) {
    this.state = new MemoryQuotaState({ maxClients: options.maxClients })
    this.floors = options.share === 1 ? this.state : new MemoryQuotaState({ maxClients: options.maxClients })
  }

  /** A plan scaled by the share (computed once per plan). */
  plan(plan: CompiledPlan): CompiledPlan {
    let s = this.scaled.get(plan)
    if (s === undefined) {
      s = scale(plan, this.options.share)
      this.scaled.set(plan, s)
    }
    return s
  }

  /** Decides a check the store could not answer; what it admits is added to the store's floor. */
  check(client: string, plan: CompiledPlan, cost: number, now: number): StoreResult {
    const result = this.state.check(client, this.plan(plan), cost, now)
    if (this.floors !== this.state) {
      if (result.allowed && cost > 0) this.floors.adjust(client, plan, cost, now)
      else if (result.blockedMs !== undefined && result.blockedMs > 0)
        this.floors.block(client, plan, now + result.blockedMs, now)
    }
    return result
  }

  /** Learns a denial: the client is denied until the store would admit it. */
  denied(client: string, plan: CompiledPlan, result: StoreResult, now: number): void {
    const wait = retryAfterMs(result.tiers)
    if (wait > 0 && Number.isFinite(wait)) this.state.block(client, this.plan(plan), now + wait, now)
  }

  /** Learns a store answer of a check of `cost` (see the module's description). */
  learn(client: string, plan: CompiledPlan, result: StoreResult, cost: number, now: number): void {
    const state = result.state
    if (state !== undefined) {
      const blockedUntil =
        result.blockedMs !== undefined && result.blockedMs > 0 ? result.now + result.blockedMs : 0
      this.floors.raise(client, plan, state, blockedUntil, now)
      if (this.floors !== this.state)
        this.state.raise(client, this.plan(plan), this.atShare(plan, state), blockedUntil, now)
      return
    }
    if (!result.allowed) return this.denied(client, plan, result, now)
    if (cost === 0) return
    const wait = emptyWaitMs(plan, result)
    if (wait > 0) this.state.block(client, this.plan(plan), now + wait, now)
  }

  /**
   * A store state at the share, rounded towards spent: a gcra tier keeps its arrival time (at the
   * share the bucket refills as fast, relative to its size), a sliding window's counts scale.
   */
  private atShare(plan: CompiledPlan, state: ReadonlyArray<number>): Array<number> {
    const scaledPlan = this.plan(plan)
    const out = state.slice()
    for (let i = 0; i < plan.tiers.length; i++) {
      const tier = plan.tiers[i]!
      const small = scaledPlan.tiers[i]!
      const o = tier.offset
      if (tier.algorithm === "gcra") {
        // the remainder r of 1/limit ms, in 1/limit' ms, rounded up
        out[o + 1] = ceilDiv(state[o + 1]! * small.limit, tier.limit)
        if (out[o + 1]! >= small.limit) {
          out[o] = state[o]! + 1
          out[o + 1] = 0
        }
      } else {
        out[o + 1] = Math.min(small.capacity, ceilDiv(state[o + 1]! * small.capacity, tier.capacity))
        out[o + 2] = Math.min(small.capacity, ceilDiv(state[o + 2]! * small.capacity, tier.capacity))
      }
    }
    return out
  }

  /**
   * The floor of a client's state to send with a check (its block, then the plan's layout), or
   * `undefined` when the fallback knows of nothing spent.
   */
  floor(client: string, plan: CompiledPlan, now: number): Array<number> | undefined {
    return this.floors.floorOf(client, plan, now)
  }

  /** A penalty (`units` > 0) or a reward (< 0), as the store gets it. */
  adjust(client: string, plan: CompiledPlan, units: number, now: number): void {
    this.state.adjust(client, this.plan(plan), units, now)
    if (this.floors !== this.state) this.floors.adjust(client, plan, units, now)
  }

  /** A block of `durationMs` from `now`, as the store gets it. */
  block(client: string, plan: CompiledPlan, durationMs: number, now: number): void {
    this.state.block(client, this.plan(plan), now + durationMs, now)
    if (this.floors !== this.state) this.floors.block(client, plan, now + durationMs, now)
  }

  /** Forgets a client. */
  reset(client: string): void {
    this.state.reset(client)
    this.floors.reset(client)
  }

  /** How many clients it holds state for. */
  get size(): number {
    return this.state.size
  }
}

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
 * {@link Fallback.floor} goes with a check when the store may have lost the client's state (see
 * the Redis store); the store raises its state to it (the maximum, never the sum), so a client is never admitted past its plan and the fallback's share across
 * the loss. The floor is kept on the store's clock (Redis' `TIME`), exactly as answered, so
 * sending it back never raises a store that remembers; the fallback decides on this process's
 * clock, its state moved by the difference seen in the last answer. Penalties, rewards, blocks
 * and resets reach it as they reach the store.
 *
 * @since 0.2.0
 */
import { emptyWaitMs, retryAfterMs } from "./QuotaDecision.js"
import { MemoryQuotaState } from "./MemoryStore.js"
import type { CompiledPlan, StoreResult } from "./QuotaPlan.js"
import { ceilDiv, scale } from "./QuotaPlan.js"

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
  /** the store's floor: on the store's plans and the store's clock */
  private readonly floors: MemoryQuotaState
  private readonly scaled = new WeakMap<CompiledPlan, CompiledPlan>()
  /** this process's clock minus the store's, as of the last answer */
  private offset = 0

  constructor(readonly options: FallbackOptions) {
    this.state = new MemoryQuotaState({ maxClients: options.maxClients })
    this.floors = new MemoryQuotaState({ maxClients: options.maxClients })
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
    if (result.allowed && cost > 0) this.floors.adjust(client, plan, cost, now - this.offset)
    else if (result.blockedMs !== undefined && result.blockedMs > 0)
      this.floors.block(client, plan, now - this.offset + result.blockedMs, now - this.offset)
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
      const blockedMs = result.blockedMs !== undefined && result.blockedMs > 0 ? result.blockedMs : 0
      this.floors.raise(client, plan, state, blockedMs > 0 ? result.now + blockedMs : 0, result.now)
      this.offset = now - result.now
      this.state.raise(
        client,
        this.plan(plan),
        this.local(plan, state, now, result.now),
        blockedMs > 0 ? now + blockedMs : 0,
        now
      )
      return
    }
    if (!result.allowed) return this.denied(client, plan, result, now)
    if (cost === 0) return
    const wait = emptyWaitMs(plan, result)
    if (wait > 0) this.state.block(client, this.plan(plan), now + wait, now)
  }

  /**
   * A store state as the fallback's: on this process's clock (moved by the offset) and at the
   * share, rounded towards spent: a gcra tier keeps its arrival time (at the share the bucket
   * refills as fast, relative to its size), a sliding window's counts scale.
   */
  private local(
    plan: CompiledPlan,
    state: ReadonlyArray<number>,
    now: number,
    storeNow: number
  ): Array<number> {
    const scaledPlan = this.plan(plan)
    const offset = now - storeNow
    const out = state.slice()
    for (let i = 0; i < plan.tiers.length; i++) {
      const tier = plan.tiers[i]!
      const small = scaledPlan.tiers[i]!
      const o = tier.offset
      if (tier.algorithm === "gcra") {
        out[o] = state[o]! + offset
        if (small !== tier) {
          // the remainder r of 1/limit ms, in 1/limit' ms, rounded up
          out[o + 1] = ceilDiv(state[o + 1]! * small.limit, tier.limit)
          if (out[o + 1]! >= small.limit) {
            out[o] = out[o]! + 1
            out[o + 1] = 0
          }
        }
      } else {
        // the store's window as the local one that holds the answer (the two clocks' windows
        // need not line up: the counts then stay in force up to a window longer, or shorter)
        const per = tier.periodMs
        out[o] = Math.floor(now / per) - (Math.floor(storeNow / per) - state[o]!)
        if (small !== tier) {
          out[o + 1] = Math.min(small.capacity, ceilDiv(state[o + 1]! * small.capacity, tier.capacity))
          out[o + 2] = Math.min(small.capacity, ceilDiv(state[o + 2]! * small.capacity, tier.capacity))
        }
      }
    }
    return out
  }

  /**
   * The floor of a client's state to send with a check (its block, then the plan's layout, on
   * the store's clock), or `undefined` when the fallback knows of nothing spent.
   */
  floor(client: string, plan: CompiledPlan, now: number): Array<number> | undefined {
    return this.floors.floorOf(client, plan, now - this.offset)
  }

  /** Whether {@link floor} would answer a floor for this client (a map lookup, nothing built). */
  knows(client: string, plan: CompiledPlan, now: number): boolean {
    return this.floors.holds(client, plan, now - this.offset)
  }

  /** A penalty (`units` > 0) or a reward (< 0), as the store gets it. */
  adjust(client: string, plan: CompiledPlan, units: number, now: number): void {
    this.state.adjust(client, this.plan(plan), units, now)
    this.floors.adjust(client, plan, units, now - this.offset)
  }

  /** A block of `durationMs` from `now`, as the store gets it. */
  block(client: string, plan: CompiledPlan, durationMs: number, now: number): void {
    this.state.block(client, this.plan(plan), now + durationMs, now)
    this.floors.block(client, plan, now - this.offset + durationMs, now - this.offset)
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

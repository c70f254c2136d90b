/**
 * The local insurance quota behind a remote store: the memory store on the same plans, each
 * scaled by `share` (with N instances, `1 / N` keeps the fleet within the plan while the store is
 * away), deciding the checks the store could not answer in time.
 *
 * It learns from the store's answers, so a fleet that falls back (a slow or lost Redis) does not
 * hand out a quota the store already saw spent: a client the store denies until t is denied by
 * the fallback until t too, and an admission that left a gcra tier empty says the same a little
 * earlier (the next unit is at most one emission interval away, so the fallback denies the
 * client for that long). Penalties, rewards, blocks and resets reach it as they reach the store.
 *
 * @since 0.2.0
 */
import { emptyWaitMs, retryAfterMs } from "./Decision.js"
import { MemoryQuotaState } from "./MemoryStore.js"
import type { CompiledPlan, StoreResult } from "./Plan.js"
import { scale } from "./Plan.js"

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
  private readonly scaled = new WeakMap<CompiledPlan, CompiledPlan>()

  constructor(readonly options: FallbackOptions) {
    this.state = new MemoryQuotaState({ maxClients: options.maxClients })
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

  /** Decides a check the store could not answer. */
  check(client: string, plan: CompiledPlan, cost: number, now: number): StoreResult {
    return this.state.check(client, this.plan(plan), cost, now)
  }

  /** Learns a denial: the client is denied until the store would admit it. */
  denied(client: string, plan: CompiledPlan, result: StoreResult, now: number): void {
    const wait = retryAfterMs(result.tiers)
    if (wait > 0 && Number.isFinite(wait)) this.state.block(client, this.plan(plan), now + wait, now)
  }

  /** Learns a store answer of a check of `cost`: a denial, or an admission that emptied a gcra tier. */
  learn(client: string, plan: CompiledPlan, result: StoreResult, cost: number, now: number): void {
    if (!result.allowed) return this.denied(client, plan, result, now)
    if (cost === 0) return
    const wait = emptyWaitMs(plan, result)
    if (wait > 0) this.state.block(client, this.plan(plan), now + wait, now)
  }

  /** A penalty (`units` > 0) or a reward (< 0), as the store gets it. */
  adjust(client: string, plan: CompiledPlan, units: number, now: number): void {
    this.state.adjust(client, this.plan(plan), units, now)
  }

  /** A block of `durationMs` from `now`, as the store gets it. */
  block(client: string, plan: CompiledPlan, durationMs: number, now: number): void {
    this.state.block(client, this.plan(plan), now + durationMs, now)
  }

  /** Forgets a client. */
  reset(client: string): void {
    this.state.reset(client)
  }

  /** How many clients it holds state for. */
  get size(): number {
    return this.state.size
  }
}

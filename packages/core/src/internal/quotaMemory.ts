import type { CompiledPlan, StoreResult } from "./quotaPlan.js"
import { consume, decide, fullAt, initState, roll } from "./quotaPlan.js"

interface ClientState {
  shape: string
  plan: CompiledPlan
  /** after this instant every tier is full again: the state is equivalent to no state */
  expiresAt: number
  /** the tiers' numbers, flat (see `CompiledTier.offset`) */
  state: Array<number>
}

const freshState = (plan: CompiledPlan): Array<number> => {
  const state: Array<number> = new Array(plan.stateSize)
  for (const tier of plan.tiers) initState(tier, state)
  return state
}

const reshape = (client: ClientState, plan: CompiledPlan): Array<number> => {
  // a plan changed while running: keep the state of tiers that kept name and algorithm
  const state = freshState(plan)
  const old = client.plan.tiers
  for (const tier of plan.tiers) {
    const match = old.find((o) => o.name === tier.name && o.algorithm === tier.algorithm)
    if (match === undefined) continue
    const size = tier.algorithm === "gcra" ? 1 : 3
    for (let k = 0; k < size; k++) state[tier.offset + k] = client.state[match.offset + k]!
  }
  return state
}

/** @internal */
export interface MemoryOptions {
  readonly maxClients: number
}

/** A generation of clients, and the instant after which every one of them is idle. */
class Generation {
  readonly clients = new Map<string, ClientState>()
  idleAt = -Infinity
}

/**
 * The in-process quota state, bounded with two generations: clients live in the
 * current generation; when it reaches half of `maxClients` it becomes the previous
 * one (whose clients move back on their next check) and the old previous is
 * dropped, so at most `maxClients` are held and the least recently seen go first.
 * A client whose tiers are all full again is indistinguishable from an unknown
 * one, so it is forgotten at once, and a whole generation is dropped as soon as
 * all its clients are idle. No per-call scan, no timers.
 *
 * @internal
 */
export class MemoryQuotaState {
  private current = new Generation()
  private previous = new Generation()
  private readonly half: number
  constructor(readonly options: MemoryOptions) {
    this.half = Math.max(1, Math.ceil(options.maxClients / 2))
  }

  get size(): number {
    return this.current.clients.size + this.previous.clients.size
  }

  check(client: string, plan: CompiledPlan, cost: number, now: number): StoreResult {
    if (this.previous.idleAt <= now && this.previous.clients.size > 0) this.previous = new Generation()
    if (this.current.idleAt <= now && this.current.clients.size > 0) this.current = new Generation()
    const current = this.current.clients
    let state = current.get(client)
    let inCurrent = state !== undefined
    if (state === undefined) {
      state = this.previous.clients.get(client)
      if (state !== undefined) this.previous.clients.delete(client)
    }
    if (state !== undefined && state.expiresAt <= now) {
      // idle: every tier is full again, which is the state of a new client
      state = undefined
      if (inCurrent) current.delete(client)
      inCurrent = false
    }
    if (state !== undefined) {
      if (state.shape !== plan.shape) {
        state.state = reshape(state, plan)
        state.shape = plan.shape
      }
      state.plan = plan
    } else {
      state = { shape: plan.shape, plan, expiresAt: now, state: freshState(plan) }
    }
    const result = checkState(state.state, plan, cost, now)
    let expiresAt = fullAt(plan.tiers, state.state)
    if (expiresAt < now) expiresAt = now
    state.expiresAt = expiresAt
    if (expiresAt > now) {
      if (expiresAt > this.current.idleAt) this.current.idleAt = expiresAt
      if (!inCurrent) {
        current.set(client, state)
        if (current.size >= this.half) {
          this.previous = this.current
          this.current = new Generation()
        }
      }
    } else if (inCurrent) current.delete(client)
    return result
  }
}

/**
 * One check over every tier of a plan: first decide each tier without consuming,
 * then consume from all of them only if all pass, so a denied request costs nothing.
 *
 * @internal
 */
export const checkState = (
  state: Array<number>,
  plan: CompiledPlan,
  cost: number,
  now: number
): StoreResult => {
  const ok: Array<boolean> = new Array(plan.tiers.length)
  const allowed = roll(plan.tiers, state, cost, now, false, ok)
  const tiers = decide(plan.tiers, state, cost, now, false, allowed, ok)
  if (allowed) consume(plan.tiers, state, cost, false)
  return { allowed, tiers, now }
}

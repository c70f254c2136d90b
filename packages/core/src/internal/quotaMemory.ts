import type { CompiledPlan, CompiledTier, StoreResult, TierDecision } from "./quotaPlan.js"
import { EPSILON } from "./quotaPlan.js"

/**
 * The admitted units of one sliding-window tier: a flat `[time, cost, time, cost, ...]`
 * log with a moving head, so expiring entries costs no allocation.
 */
class SlidingLog {
  data: Array<number> = []
  head = 0
  sum = 0

  expire(cutoff: number): void {
    const data = this.data
    let head = this.head
    while (head < data.length && data[head]! <= cutoff) {
      this.sum -= data[head + 1]!
      head += 2
    }
    if (head === data.length) {
      this.data = []
      this.head = 0
      this.sum = 0
      return
    }
    if (head > 64 && head * 2 > data.length) {
      this.data = data.slice(head)
      head = 0
    }
    this.head = head
  }

  last(): number {
    return this.data.length > this.head ? this.data[this.data.length - 2]! : -Infinity
  }
}

type Slot = number | SlidingLog

interface ClientState {
  shape: string
  plan: CompiledPlan
  /** after this instant every tier is full again: the state is equivalent to no state */
  expiresAt: number
  slots: Array<Slot>
}

const emptySlot = (tier: CompiledTier): Slot => (tier.algorithm === "gcra" ? 0 : new SlidingLog())

const reshape = (state: ClientState | undefined, plan: CompiledPlan): Array<Slot> => {
  if (state === undefined) return plan.tiers.map(emptySlot)
  // a plan changed while running: keep the state of tiers that kept name and algorithm
  const old = state.plan.tiers
  return plan.tiers.map((tier) => {
    const match = old.find((o) => o.name === tier.name && o.algorithm === tier.algorithm)
    return match === undefined ? emptySlot(tier) : state.slots[match.index]!
  })
}

/** @internal */
export interface MemoryOptions {
  readonly maxClients: number
}

/**
 * The in-process quota state. Clients are kept in a `Map` in least-recently-used
 * order; a client whose tiers are all full again is indistinguishable from an
 * unknown one, so it is evicted as soon as the sweep reaches it, and the map never
 * holds more than `maxClients` (the least recently used client goes first).
 *
 * @internal
 */
export class MemoryQuotaState {
  readonly clients = new Map<string, ClientState>()
  constructor(readonly options: MemoryOptions) {}

  get size(): number {
    return this.clients.size
  }

  check(client: string, plan: CompiledPlan, cost: number, now: number): StoreResult {
    const clients = this.clients
    let state = clients.get(client)
    if (state !== undefined) {
      clients.delete(client)
      if (state.shape !== plan.shape) {
        state.slots = reshape(state, plan)
        state.shape = plan.shape
      }
      state.plan = plan
    } else {
      state = { shape: plan.shape, plan, expiresAt: now, slots: reshape(undefined, plan) }
    }
    const result = checkSlots(state.slots, plan.tiers, cost, now)
    let expiresAt = now
    const tiers = plan.tiers
    for (let i = 0; i < tiers.length; i++) {
      const slot = state.slots[i]!
      const until = typeof slot === "number" ? slot : slot.last() + tiers[i]!.periodMs
      if (until > expiresAt) expiresAt = until
    }
    state.expiresAt = expiresAt
    if (expiresAt > now) clients.set(client, state)
    this.sweep(now)
    return result
  }

  /** Evicts idle clients from the least recently used end, a few per call. */
  sweep(now: number): void {
    const clients = this.clients
    let budget = 4
    while (clients.size > this.options.maxClients) {
      const oldest = clients.keys().next()
      if (oldest.done) break
      clients.delete(oldest.value)
    }
    for (const [key, state] of clients) {
      if (budget-- === 0 || state.expiresAt > now) break
      clients.delete(key)
    }
  }
}

/**
 * One check over every tier of a plan: first decide each tier without consuming,
 * then consume from all of them only if all pass, so a denied request costs nothing.
 *
 * @internal
 */
export const checkSlots = (
  slots: Array<Slot>,
  tiers: ReadonlyArray<CompiledTier>,
  cost: number,
  now: number
): StoreResult => {
  const n = tiers.length
  let allowed = true
  const pass: Array<boolean> = new Array(n)
  for (let i = 0; i < n; i++) {
    const tier = tiers[i]!
    const slot = slots[i]!
    let ok: boolean
    if (typeof slot === "number") {
      const tat = slot > now ? slot : now
      ok = tat + cost * tier.emissionMs - tier.capacity * tier.emissionMs <= now
    } else {
      slot.expire(now - tier.periodMs)
      ok = slot.sum + cost <= tier.capacity
    }
    pass[i] = ok
    if (!ok) allowed = false
  }
  const decisions: Array<TierDecision> = new Array(n)
  for (let i = 0; i < n; i++) {
    const tier = tiers[i]!
    const slot = slots[i]!
    const ok = pass[i]!
    if (typeof slot === "number") {
      const tat = slot > now ? slot : now
      const em = tier.emissionMs
      const tau = tier.capacity * em
      const newTat = tat + cost * em
      const at = allowed ? newTat : tat
      if (allowed) slots[i] = newTat
      decisions[i] = {
        tier: tier.name,
        algorithm: "gcra",
        allowed: ok,
        limit: tier.capacity,
        remaining: Math.max(0, Math.floor((tau - (at - now)) / em + EPSILON)),
        resetMs: Math.ceil(at - now),
        retryAfterMs: ok ? 0 : Math.ceil(newTat - tau - now)
      }
    } else {
      const sum = slot.sum
      let retryAfterMs = 0
      if (!ok) {
        const need = sum + cost - tier.capacity
        let freed = 0
        retryAfterMs = tier.periodMs
        for (let j = slot.head; j < slot.data.length; j += 2) {
          freed += slot.data[j + 1]!
          if (freed >= need) {
            retryAfterMs = Math.ceil(slot.data[j]! + tier.periodMs - now)
            break
          }
        }
      }
      if (allowed) {
        slot.data.push(now, cost)
        slot.sum = sum + cost
      }
      const last = slot.last()
      decisions[i] = {
        tier: tier.name,
        algorithm: "sliding-window",
        allowed: ok,
        limit: tier.capacity,
        remaining: tier.capacity - slot.sum,
        resetMs: last === -Infinity ? 0 : Math.ceil(last + tier.periodMs - now),
        retryAfterMs
      }
    }
  }
  return { allowed, tiers: decisions, now }
}

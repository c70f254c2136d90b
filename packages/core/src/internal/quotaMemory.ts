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

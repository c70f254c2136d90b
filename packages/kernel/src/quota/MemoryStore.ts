/**
 * The in-process quota store's state: per client the flat numbers of its plan's tiers and its
 * block, bounded in memory without timers or scans (two generations of clients, the least
 * recently seen dropped first, a client forgotten as soon as every tier is full again). Time is
 * the caller's `now` in whole milliseconds: the binding floors its clock, so decisions are
 * those of the Redis script and the exact reference.
 *
 * @since 0.2.0
 */
import { type Issue, unknownKeys } from "../options/Field.js"
import type { CompiledPlan, StoreResult } from "./QuotaPlan.js"
import { adjustTier, checkState, fullAt, initState, raiseState, startBlock, stateSize } from "./QuotaPlan.js"

interface ClientState {
  shape: string
  plan: CompiledPlan
  /** after this instant every tier is full again: the state is equivalent to no state */
  expiresAt: number
  /** the tiers' numbers, flat (see `CompiledTier.offset`) */
  state: Array<number>
  /** blocked until (ms), after a denial when the plan has `blockFor`, or by `block` */
  blockedUntil: number
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
    const size = stateSize(tier.algorithm)
    for (let k = 0; k < size; k++) state[tier.offset + k] = client.state[match.offset + k]!
  }
  return state
}

/**
 * `maxClients`: at most this many clients hold state.
 *
 * @since 0.2.0
 */
export interface MemoryOptions {
  readonly maxClients: number
}

/**
 * How many clients hold state unless told otherwise.
 *
 * @since 0.2.0
 */
export const DEFAULT_MAX_CLIENTS = 100_000

/**
 * Resolves the options as given: `maxClients` a positive integer, by default
 * {@link DEFAULT_MAX_CLIENTS}. Answers the options, or the issues naming the field.
 *
 * @since 0.2.0
 */
export const resolveOptions = (input: {
  readonly maxClients?: number | undefined
}): MemoryOptions | Array<Issue> => {
  const issues = unknownKeys(input, ["maxClients"])
  const maxClients = input.maxClients ?? DEFAULT_MAX_CLIENTS
  if (!(Number.isInteger(maxClients) && maxClients > 0)) {
    issues.push({ path: ["maxClients"], message: `expected a positive integer, got ${String(maxClients)}` })
  }
  return issues.length === 0 ? { maxClients } : issues
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
 * @since 0.2.0
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

  /** Finds (or makes) a client's state, rolled to the plan; `undefined` state means new. */
  private enter(client: string, plan: CompiledPlan, now: number): { state: ClientState; inCurrent: boolean } {
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
      state = { shape: plan.shape, plan, expiresAt: now, state: freshState(plan), blockedUntil: 0 }
    }
    return { state, inCurrent }
  }

  /** Keeps a client's state while it differs from a new client's, forgets it otherwise. */
  private leave(
    client: string,
    plan: CompiledPlan,
    state: ClientState,
    inCurrent: boolean,
    now: number
  ): void {
    const current = this.current.clients
    let expiresAt = fullAt(plan.tiers, state.state)
    if (state.blockedUntil > expiresAt) expiresAt = state.blockedUntil
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
  }

  /** A check at `now` (whole ms); cost 0 peeks. */
  check(client: string, plan: CompiledPlan, cost: number, now: number): StoreResult {
    const { inCurrent, state } = this.enter(client, plan, now)
    let result = checkState(state.state, plan, cost, now, state.blockedUntil)
    if (!result.allowed && cost > 0 && plan.blockForMs > 0 && state.blockedUntil <= now) {
      state.blockedUntil = now + plan.blockForMs
      result = startBlock(result, plan.blockForMs)
    }
    this.leave(client, plan, state, inCurrent, now)
    return result
  }

  /** Adds (penalty, > 0) or gives back (reward, < 0) units on every tier, clamped to [0, capacity]. */
  adjust(client: string, plan: CompiledPlan, units: number, now: number): void {
    const { inCurrent, state } = this.enter(client, plan, now)
    for (const tier of plan.tiers) adjustTier(tier, state.state, now, units)
    this.leave(client, plan, state, inCurrent, now)
  }

  /** Blocks a client until `until` (ms); a block already longer stays. */
  block(client: string, plan: CompiledPlan, until: number, now: number): void {
    const { inCurrent, state } = this.enter(client, plan, now)
    if (until > state.blockedUntil) state.blockedUntil = until
    this.leave(client, plan, state, inCurrent, now)
  }

  /**
   * Raises a client's state to at least `floor` (the plan's layout, see `raiseState`) and its
   * block to at least `blockedUntil`.
   */
  raise(
    client: string,
    plan: CompiledPlan,
    floor: ArrayLike<number>,
    blockedUntil: number,
    now: number
  ): void {
    const { inCurrent, state } = this.enter(client, plan, now)
    raiseState(plan.tiers, state.state, floor)
    if (blockedUntil > state.blockedUntil) state.blockedUntil = blockedUntil
    this.leave(client, plan, state, inCurrent, now)
  }

  /**
   * A client's state as a floor for a store that may have lost it: its block, then its numbers
   * in the plan's layout; `undefined` when it holds nothing a new client would not (or was kept
   * for another plan's shape).
   */
  floorOf(client: string, plan: CompiledPlan, now: number): Array<number> | undefined {
    const state = this.current.clients.get(client) ?? this.previous.clients.get(client)
    if (state === undefined || state.expiresAt <= now || state.shape !== plan.shape) return undefined
    const numbers = state.state
    const floor: Array<number> = new Array(numbers.length + 1)
    floor[0] = state.blockedUntil
    // a tier never used holds -Infinity: 0 is as old, and a number every store reads
    for (let i = 0; i < numbers.length; i++) floor[i + 1] = numbers[i] === -Infinity ? 0 : numbers[i]!
    return floor
  }

  /** Whether {@link floorOf} would answer a floor (without building it). */
  holds(client: string, plan: CompiledPlan, now: number): boolean {
    const state = this.current.clients.get(client) ?? this.previous.clients.get(client)
    return state !== undefined && state.expiresAt > now && state.shape === plan.shape
  }

  /** Forgets a client: its next check starts with full tiers and no block. */
  reset(client: string): void {
    this.current.clients.delete(client)
    this.previous.clients.delete(client)
  }
}

/**
 * The plans in force: a default and per-client overrides, as set in this process or read from a
 * plan store. A plan store keeps each plan as JSON (periods in milliseconds) and is read whole:
 * what it no longer holds is removed, and an entry that does not decode leaves the plan in force
 * before it (a bad write elsewhere never takes a client's quota away).
 *
 * @since 0.2.0
 */
import type { PlanSpec } from "./QuotaPlan.js"

/**
 * The plans of a table, of any representation `P` (the binding's compiled plans).
 *
 * @since 0.2.0
 */
export class PlanTable<P> {
  readonly overrides = new Map<string, P>()
  /** the default in force */
  defaultPlan: P

  /** `configured`: the default given at construction, in force whenever a store holds none. */
  constructor(readonly configured: P) {
    this.defaultPlan = configured
  }

  /** The plan of a client: its override, or the default. */
  planFor(client: string): P {
    return this.overrides.get(client) ?? this.defaultPlan
  }

  /** Sets a client's plan, or (no client) the default. */
  set(plan: P, client?: string): void {
    if (client === undefined) this.defaultPlan = plan
    else this.overrides.set(client, plan)
  }

  /** Removes a client's override: the default applies to it again. */
  remove(client: string): void {
    this.overrides.delete(client)
  }

  /**
   * Applies what a plan store holds: its default (`null`: none, so the configured one; `undefined`:
   * it did not decode, so the one in force stays) and every override (`undefined`: it did not
   * decode, so the one in force, if any, stays). Overrides it does not hold are removed.
   */
  refresh(storedDefault: P | null | undefined, stored: Iterable<readonly [string, P | undefined]>): void {
    if (storedDefault === null) this.defaultPlan = this.configured
    else if (storedDefault !== undefined) this.defaultPlan = storedDefault
    const next = new Map<string, P>()
    for (const [client, plan] of stored) {
      const kept = plan ?? this.overrides.get(client)
      if (kept !== undefined) next.set(client, kept)
    }
    for (const client of this.overrides.keys()) if (!next.has(client)) this.overrides.delete(client)
    for (const [client, plan] of next) this.overrides.set(client, plan)
  }
}

/**
 * A plan as a plan store keeps it: JSON, periods and `blockFor` in milliseconds, absent fields
 * left out.
 *
 * @since 0.2.0
 */
export const toJson = (plan: PlanSpec): string =>
  JSON.stringify({
    tiers: plan.tiers.map((tier) => ({
      name: tier.name,
      algorithm: tier.algorithm,
      limit: tier.limit,
      period: tier.periodMs,
      ...(tier.burst === undefined ? {} : { burst: tier.burst })
    })),
    ...(plan.blockForMs === undefined ? {} : { blockFor: plan.blockForMs })
  })

/**
 * A stored plan read back: its JSON, or (not JSON) the string itself, so the decoder names what
 * is wrong with it.
 *
 * @since 0.2.0
 */
export const fromStored = (stored: string): unknown => {
  try {
    return JSON.parse(stored)
  } catch {
    return stored
  }
}

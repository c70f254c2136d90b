import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { dual } from "effect/Function"
import * as Order_ from "effect/Order"
import type { Criticality } from "../Criticality.js"

/** @internal */
export const levels: ReadonlyArray<Criticality> = ["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE"]

const ranks: Record<Criticality, number> = {
  CRITICAL_PLUS: 3,
  CRITICAL: 2,
  SHEDDABLE_PLUS: 1,
  SHEDDABLE: 0
}

/** @internal */
export const rank = (level: Criticality): number => ranks[level]

/** @internal */
export const Order: Order_.Order<Criticality> = Order_.mapInput(Order_.number, rank)

/** @internal */
export const currentCriticality: FiberRef.FiberRef<Criticality> = FiberRef.unsafeMake<Criticality>("CRITICAL")

/** @internal */
export const current: Effect.Effect<Criticality> = FiberRef.get(currentCriticality)

/** @internal */
export const withCriticality = dual<
  (level: Criticality) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
  <A, E, R>(self: Effect.Effect<A, E, R>, level: Criticality) => Effect.Effect<A, E, R>
>(2, (self, level) => Effect.locally(self, currentCriticality, level))

const MAX_HEADER_LENGTH = 32

/** @internal */
export const parse = (value: string | null | undefined, fallback: Criticality = "CRITICAL"): Criticality => {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_HEADER_LENGTH) return fallback
  const normalized = value.trim().toUpperCase().replace(/-/g, "_")
  return Object.prototype.hasOwnProperty.call(ranks, normalized) ? (normalized as Criticality) : fallback
}

/** @internal */
export const clamp = dual<
  (ceiling: Criticality) => (level: Criticality) => Criticality,
  (level: Criticality, ceiling: Criticality) => Criticality
>(2, (level, ceiling) => (ranks[level] > ranks[ceiling] ? ceiling : level))

/** @internal */
export const isAtLeast = dual<
  (that: Criticality) => (self: Criticality) => boolean,
  (self: Criticality, that: Criticality) => boolean
>(2, (self, that) => ranks[self] >= ranks[that])

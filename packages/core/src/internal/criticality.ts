import * as Kernel from "@sluice/kernel/criticality/Criticality"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { dual } from "effect/Function"
import type { Criticality } from "../Criticality.js"

/** @internal */
export const currentCriticality: FiberRef.FiberRef<Criticality> = FiberRef.unsafeMake<Criticality>(
  Kernel.defaultLevel
)

/** @internal */
export const current: Effect.Effect<Criticality> = FiberRef.get(currentCriticality)

/** @internal */
export const withCriticality = dual<
  (level: Criticality) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
  <A, E, R>(self: Effect.Effect<A, E, R>, level: Criticality) => Effect.Effect<A, E, R>
>(2, (self, level) => Effect.locally(self, currentCriticality, level))

/** @internal */
export const clamp = dual<
  (ceiling: Criticality) => (level: Criticality) => Criticality,
  (level: Criticality, ceiling: Criticality) => Criticality
>(2, Kernel.clamp)

/** @internal */
export const isAtLeast = dual<
  (that: Criticality) => (self: Criticality) => boolean,
  (self: Criticality, that: Criticality) => boolean
>(2, Kernel.isAtLeast)

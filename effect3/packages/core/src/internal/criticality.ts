import * as Kernel from "@sluice/kernel/criticality/Criticality"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { dual } from "effect/Function"
import type { Criticality } from "../Criticality.js"

/** @internal */
export const currentCriticality: FiberRef.FiberRef<Criticality> = FiberRef.unsafeMake(Kernel.defaultLevel)

/** @internal */
export const current: Effect.Effect<Criticality> = FiberRef.get(currentCriticality)

/** @internal (the duals are typed by the public module) */
export const withCriticality = dual(2, (self: Effect.Effect<unknown, unknown, unknown>, level: Criticality) =>
  Effect.locally(self, currentCriticality, level)
)

/** @internal */
export const clamp = dual(2, Kernel.clamp)

/** @internal */
export const isAtLeast = dual(2, Kernel.isAtLeast)

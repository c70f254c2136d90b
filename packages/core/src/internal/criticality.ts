import * as Kernel from "@sluice/kernel/criticality/Criticality"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type { Criticality } from "../Criticality.js"
import type { QuotaExceeded } from "../Errors.js"

/** @internal */
export const currentCriticality: Context.Reference<Criticality> = Context.Reference<Criticality>(
  "@sluice/core/Criticality",
  { defaultValue: () => Kernel.defaultLevel }
)

/** @internal */
export const currentOverQuota: Context.Reference<QuotaExceeded | undefined> = Context.Reference<
  QuotaExceeded | undefined
>("@sluice/core/Criticality/OverQuota", { defaultValue: () => undefined })

/** @internal */
export const current: Effect.Effect<Criticality> = Effect.service(currentCriticality)

/** @internal (the duals are typed by the public module) */
export const withCriticality = dual(2, (self: Effect.Effect<unknown, unknown, unknown>, level: Criticality) =>
  Effect.provideService(self, currentCriticality, level)
)

/** @internal */
export const clamp = dual(2, Kernel.clamp)

/** @internal */
export const isAtLeast = dual(2, Kernel.isAtLeast)

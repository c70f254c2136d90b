import * as Kernel from "@sluice/kernel/criticality/Criticality"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type { Criticality } from "../Criticality.js"
import type { ServerLoad, Snapshot } from "../ServerLoad.js"

/** @internal */
export const idle: ServerLoad = { utilization: () => 0, admits: () => true }

/** @internal */
export const currentServerLoad: Context.Reference<ServerLoad> = Context.Reference<ServerLoad>(
  "@sluice/core/ServerLoad",
  { defaultValue: () => idle }
)

/** @internal */
export const leastAdmitted = (load: ServerLoad, nowMillis: number): Criticality | undefined => {
  // Least critical first: a shedder that admits a level admits every more critical one.
  for (const level of Kernel.ascending) if (load.admits(level, nowMillis)) return level
  return undefined
}

/** @internal */
export const snapshot = (load: ServerLoad, nowMillis: number): Snapshot => {
  const least = leastAdmitted(load, nowMillis)
  return { utilization: load.utilization(nowMillis), leastAdmitted: least, overloaded: least !== "SHEDDABLE" }
}

/** @internal */
export const get: Effect.Effect<Snapshot> = Effect.withFiber((fiber) =>
  Effect.succeed(
    snapshot(fiber.getRef(currentServerLoad), fiber.getRef(Clock.Clock).currentTimeMillisUnsafe())
  )
)

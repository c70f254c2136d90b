/**
 * How loaded this server is now, readable by the work it runs: a handler can choose a cheaper
 * answer (a cached copy, part of a corpus) before anything refuses it, and a policy can act
 * only under overload (a quota that bites only then).
 *
 * The reading lives in a `Context.Reference` ({@link currentServerLoad}). `Middleware.loadShed`
 * (`@sluice/http`) sets it, for the work it admits, to the `LoadShedder` (and limiter) it
 * judges by; outside one it reads as an idle server.
 *
 * **Details**
 *
 * - A {@link ServerLoad} is live: `utilization(now)` and `admits(level, now)` answer at the
 *   instant asked, recording nothing. {@link get} takes a {@link Snapshot} at the `Clock`'s now:
 *   the utilization, the least critical level admitted now (`leastAdmitted`), and
 *   `overloaded` (some level is shed, i.e. `leastAdmitted` is not `SHEDDABLE`).
 * - A shedder admits every level more critical than one it admits, so `leastAdmitted` says
 *   who is admitted: that level and every level above it.
 *
 * **Gotchas**
 *
 * - Work that is running was admitted: `leastAdmitted` may be more critical than the current
 *   request's own level (the load rose since), which is the moment to answer cheaply.
 * - The reading is the shedder's smoothed utilization, not a count of requests: a burst shows
 *   in it over the shedder's `smoothing` time.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { ServerLoad } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * declare const fullSearch: Effect.Effect<ReadonlyArray<string>>
 * declare const firstShard: Effect.Effect<ReadonlyArray<string>>
 *
 * const search = Effect.gen(function* () {
 *   const load = yield* ServerLoad.get
 *   return yield* load.overloaded || load.utilization > 0.7 ? firstShard : fullSearch
 * })
 * ```
 *
 * @since 1.1.0
 */
import * as Kernel from "@sluice/kernel/criticality/Criticality"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type { Criticality } from "./Criticality.js"

/**
 * A live reading of a server's load; both functions record nothing.
 *
 * @since 1.1.0
 * @category models
 */
export interface ServerLoad {
  /** The utilization at `nowMillis` (epoch ms): 1 is the capacity the server was given. */
  readonly utilization: (nowMillis: number) => number
  /** Whether work of `level` arriving at `nowMillis` would be admitted. */
  readonly admits: (level: Criticality, nowMillis: number) => boolean
}

/**
 * The load at one instant: `utilization`, the least critical level admitted (`undefined`
 * when none is), and `overloaded`, whether any level is shed.
 *
 * @since 1.1.0
 * @category models
 */
export interface Snapshot {
  readonly utilization: number
  readonly leastAdmitted: Criticality | undefined
  readonly overloaded: boolean
}

/**
 * An idle server: utilization 0, every level admitted (the reading outside a shedder).
 *
 * @since 1.1.0
 * @category constants
 */
export const idle: ServerLoad = { utilization: () => 0, admits: () => true }

/**
 * The current server's load, a `Context.Reference` (default {@link idle}); `Middleware.loadShed`
 * sets it for the work it admits. Set it yourself with
 * `Effect.provideService(self, ServerLoad.currentServerLoad, load)`.
 *
 * @example
 * ```ts
 * import { ServerLoad } from "@sluice/core"
 * import { Clock, Effect } from "effect"
 *
 * const busy: ServerLoad.ServerLoad = { utilization: () => 0.95, admits: (level) => level !== "SHEDDABLE" }
 * const program = Effect.gen(function* () {
 *   const load = yield* ServerLoad.currentServerLoad
 *   return load.admits("SHEDDABLE", yield* Clock.currentTimeMillis)
 * }).pipe(Effect.provideService(ServerLoad.currentServerLoad, busy))
 * Effect.runPromise(program).then(console.log) // prints: false
 * ```
 * @since 1.1.0
 * @category getters
 */
export const currentServerLoad: Context.Reference<ServerLoad> = Context.Reference<ServerLoad>(
  "@sluice/core/ServerLoad",
  { defaultValue: () => idle }
)

/**
 * A {@link Snapshot} of the current server's load at the `Clock`'s now.
 *
 * @example
 * ```ts
 * import { ServerLoad } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const { leastAdmitted, overloaded } = yield* ServerLoad.get // outside a shedder: idle
 *   console.log(leastAdmitted, overloaded) // prints: SHEDDABLE false
 * })
 * Effect.runPromise(program)
 * ```
 * @since 1.1.0
 * @category getters
 */
export const get: Effect.Effect<Snapshot> = Effect.withFiber((fiber) =>
  Effect.succeed(
    snapshot(fiber.getRef(currentServerLoad), fiber.getRef(Clock.Clock).currentTimeMillisUnsafe())
  )
)

/**
 * The least critical level `load` admits at `nowMillis` (`undefined` when none is).
 *
 * @example
 * ```ts
 * import { ServerLoad } from "@sluice/core"
 *
 * console.log(ServerLoad.leastAdmitted(ServerLoad.idle, 0)) // prints: SHEDDABLE
 * ```
 * @since 1.1.0
 * @category utils
 */
export const leastAdmitted = (load: ServerLoad, nowMillis: number): Criticality | undefined => {
  // Least critical first: a shedder that admits a level admits every more critical one.
  for (const level of Kernel.ascending) if (load.admits(level, nowMillis)) return level
  return undefined
}

/**
 * The {@link Snapshot} of `load` at `nowMillis`.
 *
 * @since 1.1.0
 * @category utils
 */
export const snapshot = (load: ServerLoad, nowMillis: number): Snapshot => {
  const least = leastAdmitted(load, nowMillis)
  return { utilization: load.utilization(nowMillis), leastAdmitted: least, overloaded: least !== "SHEDDABLE" }
}

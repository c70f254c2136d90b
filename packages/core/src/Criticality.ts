/**
 * Request criticality: how important a piece of work is, carried with the work.
 *
 * Four levels, most important first: `CRITICAL_PLUS`, `CRITICAL` (the default),
 * `SHEDDABLE_PLUS`, `SHEDDABLE`. The current level lives in a `Context.Reference`, so it
 * follows the work through forks and is copied onto outgoing requests. Throttles,
 * quotas and shedders consult it: under pressure the least critical work goes first.
 *
 * Ranking, parsing and clamping are `@sluice/kernel/criticality/Criticality`; this module
 * adds the Schema, the `Order` and the `Reference`.
 *
 * **Details**
 *
 * - {@link withCriticality} is `Effect.provideService(self, currentCriticality, level)`:
 *   the level holds for that effect and the fibers it forks, and the enclosing level
 *   comes back when it ends.
 * - Code that holds a fiber (a gate, an HTTP client middleware) reads the level with
 *   `fiber.getRef(Criticality.currentCriticality)`, without an Effect step.
 * - Within a level, work over its customer's quota ({@link currentOverQuota}, set by
 *   `Middleware.quota({ enforce: "overload" })`) comes after the level's other work: a
 *   `LoadShedder` sheds it first and a `ConcurrencyLimiter` queues it behind, but never
 *   after a less critical level.
 *
 * **Gotchas**
 *
 * - A `Context.Reference` is matched by its key (`"@sluice/core/Criticality"`), so two
 *   copies of `@sluice/core` in one application share one current level.
 * - A level parsed from a request header is the caller's claim: {@link clamp} it to what
 *   the caller is trusted with before {@link withCriticality}.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as Ord from "effect/Order"
import type { QuotaExceeded } from "./Errors.js"
import * as Schema from "effect/Schema"
import * as Kernel from "@sluice/kernel/criticality/Criticality"

/**
 * The four levels as a Schema literal.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Criticality = Schema.Literals(["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE"])

/**
 * @since 0.1.0
 * @category models
 */
export type Criticality = typeof Criticality.Type

/**
 * Every level, most important first.
 *
 * @since 0.1.0
 * @category utils
 */
export const levels: ReadonlyArray<Criticality> = Kernel.levels

/**
 * The default level: `CRITICAL`.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultLevel: Criticality = Kernel.defaultLevel

/**
 * The importance of a level as a number: `SHEDDABLE` = 0 … `CRITICAL_PLUS` = 3.
 *
 * @example
 * ```ts
 * import { Criticality } from "@sluice/core"
 *
 * console.log(Criticality.rank("CRITICAL_PLUS") > Criticality.rank("SHEDDABLE")) // prints: true
 * ```
 * @since 0.1.0
 * @category utils
 */
export const rank: (level: Criticality) => number = Kernel.rank

/**
 * Total order by importance: a less critical level is "less than" a more critical one.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Order: Ord.Order<Criticality> = Kernel.compare

/**
 * The current level, a `Context.Reference` (default `CRITICAL`). Forked fibers inherit it.
 * Read it with `yield* Criticality.currentCriticality` (or {@link current}), or from a fiber
 * with `fiber.getRef(Criticality.currentCriticality)`; set it for an effect with
 * {@link withCriticality} (`Effect.provideService(self, Criticality.currentCriticality, level)`).
 *
 * @example
 * ```ts
 * import { Criticality } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   console.log(yield* Criticality.currentCriticality) // prints: SHEDDABLE
 * }).pipe(Effect.provideService(Criticality.currentCriticality, "SHEDDABLE"))
 * Effect.runPromise(program)
 * ```
 * @since 0.1.0
 * @category getters
 */
export const currentCriticality: Context.Reference<Criticality> = Context.Reference<Criticality>(
  "@sluice/core/Criticality",
  { defaultValue: () => Kernel.defaultLevel }
)

/**
 * Marks work over its customer's quota that is admitted only while the server has room
 * (default `undefined`: within quota, or no quota). Within its criticality level such work
 * ranks last: `LoadShedder` sheds it first (from `LoadShedder.overQuotaThreshold`) and judges
 * the level's other work without it, `ConcurrencyLimiter` serves it after the level's other
 * waiters and displaces it first; a more critical level's work still goes before it, and a
 * less critical level's after it. The value is the `QuotaExceeded` its quota would have
 * answered, which `Middleware.loadShed` answers it with (a `429` and the quota's headers)
 * when it is shed.
 *
 * @example
 * ```ts
 * import { Criticality, Errors } from "@sluice/core"
 * import { Duration, Effect } from "effect"
 *
 * const overQuota = new Errors.QuotaExceeded({ tier: "spike", limit: 20, remaining: 0, retryAfter: Duration.millis(50) })
 * // shed before within-quota CRITICAL work by any shedder or limiter inside
 * const lowPriority = Effect.succeed("report").pipe(Effect.provideService(Criticality.currentOverQuota, overQuota))
 * const marked = Effect.flatMap(Criticality.currentOverQuota, (mark) => Effect.succeed(mark?.tier))
 * Effect.runPromise(marked.pipe(Effect.provideService(Criticality.currentOverQuota, overQuota))).then(console.log) // prints: spike
 * ```
 * @since 1.0.0
 * @category getters
 */
export const currentOverQuota: Context.Reference<QuotaExceeded | undefined> = Context.Reference<
  QuotaExceeded | undefined
>("@sluice/core/Criticality/OverQuota", { defaultValue: () => undefined })

/**
 * Reads the current level.
 *
 * @example
 * ```ts
 * import { Criticality } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   console.log(yield* Criticality.current) // prints: CRITICAL
 * })
 * Effect.runPromise(program) // CRITICAL unless set
 * ```
 * @since 0.1.0
 * @category getters
 */
export const current: Effect.Effect<Criticality> = Effect.service(currentCriticality)

/**
 * Runs an effect with the given level.
 *
 * @example
 * ```ts
 * import { Criticality } from "@sluice/core"
 * import { Effect } from "effect"
 *
 * const background = Criticality.current.pipe(Criticality.withCriticality("SHEDDABLE"))
 * Effect.runPromise(background).then(console.log) // prints: SHEDDABLE
 * ```
 * @since 0.1.0
 * @category combinators
 */
export const withCriticality: {
  (level: Criticality): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, level: Criticality): Effect.Effect<A, E, R>
} = dual(2, <A, E, R>(self: Effect.Effect<A, E, R>, level: Criticality) =>
  Effect.provideService(self, currentCriticality, level)
)

/**
 * Parses a header value. Case-insensitive, `-` or `_` separators; anything
 * unknown, empty, oversized or hostile gives the fallback (default `CRITICAL`).
 * Never throws.
 *
 * @example
 * ```ts
 * import { Criticality } from "@sluice/core"
 *
 * console.log(Criticality.parse("sheddable_plus")) // prints: SHEDDABLE_PLUS
 * console.log(Criticality.parse("<script>")) // prints: CRITICAL
 * ```
 * @since 0.1.0
 * @category utils
 */
export const parse: (value: string | null | undefined, fallback?: Criticality) => Criticality = Kernel.parse

/**
 * Lowers a level to a ceiling: a caller that is not trusted cannot claim more
 * than the ceiling.
 *
 * @example
 * ```ts
 * import { Criticality } from "@sluice/core"
 *
 * console.log(Criticality.clamp("CRITICAL_PLUS", "CRITICAL")) // prints: CRITICAL
 * console.log(Criticality.clamp("SHEDDABLE", "CRITICAL")) // prints: SHEDDABLE
 * ```
 * @since 0.1.0
 * @category utils
 */
export const clamp: {
  (ceiling: Criticality): (level: Criticality) => Criticality
  (level: Criticality, ceiling: Criticality): Criticality
} = dual(2, Kernel.clamp)

/**
 * Is `self` at least as critical as `that`?
 *
 * @since 0.1.0
 * @category guards
 */
export const isAtLeast: {
  (that: Criticality): (self: Criticality) => boolean
  (self: Criticality, that: Criticality): boolean
} = dual(2, Kernel.isAtLeast)

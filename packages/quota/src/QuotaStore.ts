/**
 * Where quota state lives. Every store answers one question per check — do all
 * tiers of this plan admit `cost` more units for this client, and if so consume
 * them — atomically and in one step, so a denied request consumes nothing.
 *
 * `layerMemory` keeps the state in this process: bounded, with idle clients
 * evicted. The Redis store (`@sluice/quota/Redis` over Effect's `Redis`
 * service, `@sluice/quota/IoRedis` over ioredis) shares it across processes.
 *
 * @since 0.1.0
 */
import type * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import * as plan from "./internal/quotaPlan.js"
import type * as QuotaPlan from "@sluice/kernel/quota/QuotaPlan"
import { MemoryQuotaState, resolveOptions } from "@sluice/kernel/quota/MemoryStore"
import type { InvalidOptions } from "@sluice/core/Options"
import type { CompiledPlan } from "./QuotaConfig.js"

/**
 * The answer of one tier: whether it admits the request, its limit (the bucket
 * size for `gcra`), the units remaining, milliseconds until it is full again
 * (`resetMs`), when it denies, milliseconds until the request would pass
 * (`retryAfterMs`, exact; `Infinity` when the cost exceeds the tier's capacity),
 * and `windowMs`, the window `limit` is counted over (`sliding-window`: its
 * period; `gcra`: the time to refill the bucket, `ceil(burst × period / limit)`).
 *
 * @since 0.1.0
 * @category models
 */
export interface TierDecision extends QuotaPlan.TierDecision {}

/**
 * The answer of a store: all tiers, and the store's clock (epoch ms) at decision time, with
 * `blockedMs` while the client is blocked.
 *
 * @since 0.1.0
 * @category models
 */
export interface StoreResult extends QuotaPlan.StoreResult {}

/**
 * A store call failed or missed its deadline.
 *
 * @since 0.1.0
 * @category schemas
 */
export const QuotaStoreError: Schema.Class<
  QuotaStoreError,
  Schema.TaggedStruct<
    "QuotaStoreError",
    {
      readonly store: Schema.String
      readonly reason: Schema.Literals<readonly ["timeout", "unavailable", "error"]>
      readonly message: Schema.String
    }
  >,
  Cause.YieldableError
> = plan.QuotaStoreError

/**
 * @since 0.1.0
 * @category errors
 */
export interface QuotaStoreError extends plan.QuotaStoreError {}

/**
 * A store. `remote` stores get a deadline and a circuit breaker from `Quota`;
 * local stores may offer `checkUnsafe` so the check is one synchronous step.
 * Besides `check` (cost 0 peeks), a store adjusts counts (`adjust`: a penalty, or
 * a reward when negative), blocks and resets clients.
 *
 * @since 0.1.0
 * @category models
 */
export interface Store {
  readonly name: string
  readonly remote: boolean
  readonly check: (
    client: string,
    plan: CompiledPlan,
    cost: number
  ) => Effect.Effect<StoreResult, QuotaStoreError>
  readonly checkUnsafe?: ((client: string, plan: CompiledPlan, cost: number) => StoreResult) | undefined
  /**
   * Callback form of `check` for remote stores: lets `Quota` enforce its deadline
   * without a fiber or a timer per call. Must call `callback` at most once. `floor`, given when
   * this instance holds one for the client: answers the client's block and state as this
   * instance last knew them (see the kernel's `Fallback.floor`); a store that lost the client's
   * state (a restarted or failed-over Redis) asks for it and raises the state to it, the larger
   * of the two, never the sum.
   */
  readonly checkCallback?:
    | ((
        client: string,
        plan: CompiledPlan,
        cost: number,
        callback: (error: QuotaStoreError | undefined, result: StoreResult | undefined) => void,
        floor?: (() => ReadonlyArray<number> | undefined) | undefined
      ) => void)
    | undefined
  /**
   * Answers come back in call order (one connection to one server): an answer to any call
   * shows the store is working through the calls before it — slow, not gone. With the learned
   * deadline opted in (`maxDeadline` above `deadline`), `Quota` then lets a check wait past its
   * `deadline` while answers keep coming, up to `maxDeadline`.
   */
  readonly ordered?: boolean | undefined
  /**
   * At most this many checks resumed per turn of the event loop (the rest on the turns that
   * follow; answers are still taken, and deadlines settled, as they come). For a client that
   * writes every command of one turn in one socket write (node-redis): with many checks in
   * flight, the checks resumed by one batch of answers then leave in several writes, and Redis
   * works on the first while this process builds the rest.
   */
  readonly resumesPerTurn?: number | undefined
  /** Adds `units` to every tier's count (a penalty), or gives them back when negative (a reward), clamped to [0, capacity]. */
  readonly adjust: (client: string, plan: CompiledPlan, units: number) => Effect.Effect<void, QuotaStoreError>
  /** Blocks a client for `durationMs` (a longer block in force stays). */
  readonly block: (
    client: string,
    plan: CompiledPlan,
    durationMs: number
  ) => Effect.Effect<void, QuotaStoreError>
  /**
   * Gives back `cost` units a check counted after its deadline was decided without it:
   * fire and forget (remote stores only).
   */
  readonly refund?: ((client: string, plan: CompiledPlan, cost: number) => void) | undefined
  /** Forgets a client's state and block. */
  readonly reset: (client: string) => Effect.Effect<void, QuotaStoreError>
}

/**
 * The memory store, with the number of clients it currently holds.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryStore extends Store {
  readonly checkUnsafe: (client: string, plan: CompiledPlan, cost: number) => StoreResult
  /** how many clients currently hold state */
  readonly size: Effect.Effect<number>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class QuotaStore extends Context.Service<QuotaStore, Store>()("@sluice/quota/QuotaStore") {}

/**
 * Memory store options: `maxClients` (default 100,000) bounds how many clients
 * hold state. Clients live in two generations of `maxClients / 2`; when the
 * current one fills up the older one is dropped, so the least recently seen go
 * first. A client whose tiers are all full again is forgotten at once.
 *
 * @since 0.2.0
 * @category models
 */
export interface MemoryStoreOptions {
  readonly maxClients?: number | undefined
}

/**
 * Makes a memory store. Time comes from Effect's `Clock`, so `TestClock` drives it.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { QuotaStore } from "@sluice/quota"
 *
 * const store = QuotaStore.makeMemory({ maxClients: 1_000_000 })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (options: MemoryStoreOptions = {}): Effect.Effect<MemoryStore, InvalidOptions> =>
  Effect.gen(function* () {
    const resolved = resolveOptions(options)
    if (Array.isArray(resolved)) return yield* Effect.fail(plan.invalidOptions("QuotaStore.memory", resolved))
    const clock = yield* Clock.Clock
    const state = new MemoryQuotaState(resolved)
    // decisions are made in whole milliseconds (see the kernel's quota/QuotaPlan): exact at any clock magnitude
    const now = () => Math.floor(clock.currentTimeMillisUnsafe())
    const checkUnsafe = (client: string, compiled: CompiledPlan, cost: number) =>
      state.check(client, compiled, cost, now())
    return {
      name: "memory",
      remote: false,
      checkUnsafe,
      check: (client, compiled, cost) => Effect.sync(() => checkUnsafe(client, compiled, cost)),
      adjust: (client, compiled, units) => Effect.sync(() => state.adjust(client, compiled, units, now())),
      block: (client, compiled, durationMs) =>
        Effect.sync(() => {
          const t = now()
          state.block(client, compiled, t + durationMs, t)
        }),
      reset: (client) => Effect.sync(() => state.reset(client)),
      size: Effect.sync(() => state.size)
    }
  })

/**
 * A layer with the memory store.
 *
 * @example
 * ```ts
 * // snippet: compile-only — defines a layer or route for an app to provide
 * import { QuotaStore } from "@sluice/quota"
 *
 * const StoreLive = QuotaStore.layerMemory()
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (options?: MemoryStoreOptions): Layer.Layer<QuotaStore, InvalidOptions> =>
  Layer.effect(QuotaStore, makeMemory(options))

/**
 * {@link layerMemory} with the options read from a `Config` (fails with `ConfigError`
 * or `InvalidOptions`).
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import { QuotaStore } from "@sluice/quota"
 * import { Config } from "effect"
 *
 * const StoreLive = QuotaStore.layerMemoryConfig(Config.all({ maxClients: Config.Int("QUOTA_MAX_CLIENTS") }))
 * ```
 * @since 0.2.0
 * @category layers
 */
export const layerMemoryConfig = (
  config: Config.Config<MemoryStoreOptions>
): Layer.Layer<QuotaStore, InvalidOptions | Config.ConfigError> =>
  Layer.effect(QuotaStore, Effect.flatMap(config, makeMemory))

import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Options from "./options.js"
import { MemoryQuotaState } from "./quotaMemory.js"
import type { CompiledPlan, QuotaStoreError, StoreResult } from "./quotaPlan.js"

/** @internal */
export interface Store {
  readonly name: string
  readonly remote: boolean
  readonly check: (
    client: string,
    plan: CompiledPlan,
    cost: number
  ) => Effect.Effect<StoreResult, QuotaStoreError>
  readonly unsafeCheck?: ((client: string, plan: CompiledPlan, cost: number) => StoreResult) | undefined
  /**
   * Callback form of `check` for remote stores: lets `Quota` enforce its deadline
   * without a fiber or a timer per call. Must call `callback` at most once.
   */
  readonly checkCallback?:
    | ((
        client: string,
        plan: CompiledPlan,
        cost: number,
        callback: (error: QuotaStoreError | undefined, result: StoreResult | undefined) => void
      ) => void)
    | undefined
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

/** @internal */
export interface MemoryStore extends Store {
  readonly unsafeCheck: (client: string, plan: CompiledPlan, cost: number) => StoreResult
  /** how many clients currently hold state */
  readonly size: Effect.Effect<number>
}

/** @internal */
export const MemoryOptions = Schema.Struct({
  maxClients: Schema.optionalWith(Options.PositiveInt, { default: () => 100_000 })
})

/** @internal */
export const makeMemory = (
  options: { readonly maxClients?: number | undefined } = {}
): Effect.Effect<MemoryStore, Options.InvalidOptions> =>
  Effect.gen(function* () {
    const decoded = yield* Options.decode("QuotaStore.memory", MemoryOptions)(options)
    const clock = yield* Effect.clock
    const state = new MemoryQuotaState(decoded)
    // decisions are made in whole milliseconds (see quotaPlan): exact at any clock magnitude
    const now = () => Math.floor(clock.unsafeCurrentTimeMillis())
    const unsafeCheck = (client: string, plan: CompiledPlan, cost: number) =>
      state.check(client, plan, cost, now())
    return {
      name: "memory",
      remote: false,
      unsafeCheck,
      check: (client, plan, cost) => Effect.sync(() => unsafeCheck(client, plan, cost)),
      adjust: (client, plan, units) => Effect.sync(() => state.adjust(client, plan, units, now())),
      block: (client, plan, durationMs) =>
        Effect.sync(() => {
          const t = now()
          state.block(client, plan, t + durationMs, t)
        }),
      reset: (client) => Effect.sync(() => state.reset(client)),
      size: Effect.sync(() => state.size)
    }
  })

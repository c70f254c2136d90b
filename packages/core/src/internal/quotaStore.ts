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
  options: typeof MemoryOptions.Encoded = {}
): Effect.Effect<MemoryStore, Options.InvalidOptions> =>
  Effect.gen(function* () {
    const decoded = yield* Options.decode("QuotaStore.memory", MemoryOptions)(options)
    const clock = yield* Effect.clock
    const state = new MemoryQuotaState(decoded)
    const unsafeCheck = (client: string, plan: CompiledPlan, cost: number) =>
      state.check(client, plan, cost, clock.unsafeCurrentTimeMillis())
    return {
      name: "memory",
      remote: false,
      unsafeCheck,
      check: (client, plan, cost) => Effect.sync(() => unsafeCheck(client, plan, cost)),
      size: Effect.sync(() => state.size)
    }
  })

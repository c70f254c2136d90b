import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as QS from "../QuotaStore.js"
import * as Options from "@sluice/core/Options"
import { MemoryQuotaState } from "@sluice/kernel/quota/MemoryStore"
import type { CompiledPlan } from "./quotaPlan.js"

/** @internal */
export type Store = QS.Store

/** @internal */
export type MemoryStore = QS.MemoryStore

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
    // decisions are made in whole milliseconds (see the kernel's quota/Plan): exact at any clock magnitude
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

import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as QS from "../QuotaStore.js"
import type * as Options from "@sluice/core/Options"
import { MemoryQuotaState, resolveOptions } from "@sluice/kernel/quota/MemoryStore"
import type { CompiledPlan } from "../QuotaConfig.js"
import { invalidOptions } from "./quotaPlan.js"

/** @internal */
export const makeMemory = (
  options: QS.MemoryStoreOptions = {}
): Effect.Effect<QS.MemoryStore, Options.InvalidOptions> =>
  Effect.gen(function* () {
    const resolved = resolveOptions(options)
    if (Array.isArray(resolved)) return yield* Effect.fail(invalidOptions("QuotaStore.memory", resolved))
    const clock = yield* Clock.Clock
    const state = new MemoryQuotaState(resolved)
    // decisions are made in whole milliseconds (see the kernel's quota/QuotaPlan): exact at any clock magnitude
    const now = () => Math.floor(clock.currentTimeMillisUnsafe())
    const checkUnsafe = (client: string, plan: CompiledPlan, cost: number) =>
      state.check(client, plan, cost, now())
    return {
      name: "memory",
      remote: false,
      checkUnsafe,
      check: (client, plan, cost) => Effect.sync(() => checkUnsafe(client, plan, cost)),
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

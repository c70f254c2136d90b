// A check sends the client's floor only when Redis lost the client's key: while the key is
// there the floor is never built (one marker argument instead); once it is gone the script
// answers "lost", undecided, and the check goes again with the floor, which Redis then holds.
import { Options } from "@sluice/core"
import { QuotaConfig, type QuotaStore } from "@sluice/quota"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Redis as IORedis } from "ioredis"
import { keyOf } from "@sluice/kernel/quota/RedisScript"
import { transports } from "./quota/transports.js"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"

const plan = Effect.orDie(
  Options.decode(
    "test",
    QuotaConfig.Plan
  )({
    tiers: [{ name: "count", algorithm: "sliding-window", limit: 10, period: 3_600_000 }]
  } as typeof QuotaConfig.Plan.Encoded)
).pipe(Effect.map(QuotaConfig.compile))

const check = (
  store: QuotaStore.Store,
  client: string,
  compiled: QuotaConfig.CompiledPlan,
  floor: () => ReadonlyArray<number> | undefined
) =>
  Effect.callback<QuotaStore.StoreResult, QuotaStore.QuotaStoreError>((resume) =>
    store.checkCallback!(
      client,
      compiled,
      1,
      (error, result) => resume(error === undefined ? Effect.succeed(result!) : Effect.fail(error)),
      floor
    )
  )

describe.each(transports)("the floor on demand ($name)", (transport) => {
  it.live("built only when the client's key is gone, then raised into Redis", () =>
    Effect.gen(function* () {
      const prefix = `ondemand:${process.pid}:${Math.random()}:`
      const store = yield* transport.makeStore(prefix)
      const compiled = yield* plan
      let asked = 0
      let floor: ReadonlyArray<number> | undefined = undefined
      const floorFn = () => {
        asked++
        return floor
      }
      // a new client: this instance holds no floor for it yet
      let last = yield* check(store, "c", compiled, () => undefined)
      floor = [0, ...last.state!]
      for (let i = 1; i < 8; i++) {
        last = yield* check(store, "c", compiled, floorFn)
        floor = [0, ...last.state!]
      }
      expect(last!.allowed).toBe(true)
      // the key was there every time: the floor was never asked for
      expect(asked).toBe(0)
      // Redis forgets the client (a restart without persistence)
      const redis = new IORedis(REDIS_URL)
      yield* Effect.promise(() => redis.del(keyOf(prefix, "c")))
      const back = yield* check(store, "c", compiled, floorFn)
      expect(asked).toBe(1)
      expect(back.raised).toBe(true)
      // 8 spent before, this one the 9th of 10
      expect(back.allowed).toBe(true)
      expect(back.tiers[0]!.remaining).toBe(1)
      const next = yield* check(store, "c", compiled, () => undefined)
      expect(next.tiers[0]!.remaining).toBe(0)
      expect((yield* check(store, "c", compiled, () => undefined)).allowed).toBe(false)
      yield* Effect.promise(() => redis.quit())
    }).pipe(Effect.scoped)
  )
})

// The fallback holds what the store saw spent: once a denial's wait is over it admits what the
// store would (one emission interval's unit), not a fresh burst. The store here answers with the
// client's state, as the Redis store does, on a clock of its own (epoch-scale, like Redis' TIME)
// while the service runs on the TestClock.
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { MemoryQuotaState } from "@sluice/kernel/quota/MemoryStore"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"

const STORE_CLOCK_AHEAD = 1_700_000_000_123

/** A remote store deciding like Redis (a memory state, its answers carrying the state) until `down`. */
const stateStore = Effect.gen(function* () {
  const clock = yield* Clock.Clock
  const memory = new MemoryQuotaState({ maxClients: 1000 })
  const control = { down: false }
  const store: QuotaStore.Store = {
    name: "remote",
    remote: true,
    check: () => Effect.never,
    checkCallback: (client, plan, cost, callback) => {
      if (control.down)
        return callback(
          new QuotaStore.QuotaStoreError({ store: "remote", reason: "unavailable", message: "ECONNREFUSED" }),
          undefined
        )
      const now = clock.currentTimeMillisUnsafe() + STORE_CLOCK_AHEAD
      const result = memory.check(client, plan, cost, now)
      const floor = memory.floorOf(client, plan, now)
      callback(undefined, {
        ...result,
        state: floor === undefined ? new Array(plan.stateSize).fill(0) : floor.slice(1)
      })
    },
    adjust: () => Effect.void,
    block: () => Effect.void,
    reset: () => Effect.void
  }
  return { store, control }
})

const admittedOver = (client: string, fromMs: number, toMs: number, stepMs: number) =>
  Effect.gen(function* () {
    let admitted = 0
    for (let t = fromMs; t < toMs; t += stepMs) {
      const now = yield* Clock.currentTimeMillis
      if (t > now) yield* TestClock.adjust(Duration.millis(t - now))
      const decision = yield* Quota.check(client)
      if (decision.allowed) {
        admitted++
        expect(decision.source).toBe("fallback")
      }
    }
    return admitted
  })

describe("the fallback keeps what the store saw spent", () => {
  it.effect("gcra: after the store's denial expires, one unit per emission interval, not a fresh burst", () =>
    Effect.gen(function* () {
      const plan: QuotaConfig.PlanInput = {
        tiers: [{ name: "rate", algorithm: "gcra", limit: 8, period: "10 seconds", burst: 8 }]
      }
      const { control, store } = yield* stateStore
      const layer = Quota.layer({ mode: "fallback" }).pipe(
        Layer.provide(Layer.succeed(QuotaStore.QuotaStore, store)),
        Layer.provide(QuotaConfig.layer({ default: plan }))
      )
      yield* Effect.gen(function* () {
        const first = yield* Effect.forEach(Array.from({ length: 9 }), () => Quota.check("c"))
        expect(first.filter((d) => d.allowed && d.source === "store")).toHaveLength(8)
        expect(first[8]!.retryAfterMs).toBe(1250)
        control.down = true
        // the store is gone: checks every 10 ms for 2 s; the store would admit one at 1250 ms
        const early = yield* admittedOver("c", 0, 1250, 10)
        const next = yield* admittedOver("c", 1250, 2000, 10)
        expect({ early, next }).toEqual({ early: 0, next: 1 })
        // then one per 1250 ms, as the store would
        expect(yield* admittedOver("c", 2000, 10_000, 10)).toBe(6)
      }).pipe(Effect.provide(layer))
    })
  )

  it.effect("sliding window: a client the store saw spend its window gets nothing more in it", () =>
    Effect.gen(function* () {
      const plan: QuotaConfig.PlanInput = {
        tiers: [{ name: "count", algorithm: "sliding-window", limit: 8, period: "10 seconds" }]
      }
      const { control, store } = yield* stateStore
      const layer = Quota.layer({ mode: "fallback" }).pipe(
        Layer.provide(Layer.succeed(QuotaStore.QuotaStore, store)),
        Layer.provide(QuotaConfig.layer({ default: plan }))
      )
      yield* Effect.gen(function* () {
        const first = yield* Effect.forEach(Array.from({ length: 9 }), () => Quota.check("c"))
        expect(first.filter((d) => d.allowed)).toHaveLength(8)
        control.down = true
        expect(yield* admittedOver("c", 0, 9_000, 10)).toBe(0)
      }).pipe(Effect.provide(layer))
    })
  )

  it.effect(
    "with fallbackShare 0.25: a client the store saw spend half its plan gets at most half the share",
    () =>
      Effect.gen(function* () {
        const plan: QuotaConfig.PlanInput = {
          tiers: [{ name: "count", algorithm: "sliding-window", limit: 40, period: "1 hour" }]
        }
        const { control, store } = yield* stateStore
        const layer = Quota.layer({ mode: "fallback", fallbackShare: 0.25 }).pipe(
          Layer.provide(Layer.succeed(QuotaStore.QuotaStore, store)),
          Layer.provide(QuotaConfig.layer({ default: plan }))
        )
        yield* Effect.gen(function* () {
          for (let i = 0; i < 20; i++) expect((yield* Quota.check("c")).allowed).toBe(true)
          control.down = true
          // the fallback holds 10 (a quarter of 40); 5 of them were spent at the store
          expect(yield* admittedOver("c", 0, 5_000, 10)).toBe(5)
        }).pipe(Effect.provide(layer))
      })
  )
})

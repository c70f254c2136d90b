import { Options } from "@sluice/core"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import * as IoRedis from "@sluice/quota/IoRedis"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const unique = (name: string) => `test:${name}:${process.pid}:${Math.random().toString(36).slice(2)}`

const plan: QuotaConfig.PlanInput = {
  tiers: [
    { name: "spike", algorithm: "gcra", limit: 10, period: "1 second", burst: 5 },
    { name: "count", algorithm: "sliding-window", limit: 100, period: "1 hour" }
  ]
}
const blocking: QuotaConfig.PlanInput = { ...plan, blockFor: "1 minute" }

const memoryLayer = (p: QuotaConfig.PlanInput) =>
  Quota.layer().pipe(
    Layer.provideMerge(QuotaStore.layerMemory()),
    Layer.provideMerge(QuotaConfig.layer({ default: p }))
  )
const redisLayer = (p: QuotaConfig.PlanInput) =>
  Quota.layer({ deadline: "2 seconds" }).pipe(
    Layer.provide(IoRedis.layerStoreShared({ prefix: unique("ops") + ":" })),
    Layer.provide(QuotaConfig.layer({ default: p })),
    Layer.provide(IoRedisClient.layer({ url: REDIS_URL }))
  )

const remaining = (client: string) => Effect.map(Quota.get(client), (d) => d.tiers.map((t) => t.remaining))

/** get, reward, penalty, block, reset: the same answers from both stores (time barely moves) */
const operations = Effect.gen(function* () {
  expect(yield* remaining("a")).toEqual([5, 100])
  for (let i = 0; i < 3; i++) yield* Quota.check("a")
  expect(yield* remaining("a")).toEqual([2, 97])
  // get consumed nothing
  expect(yield* remaining("a")).toEqual([2, 97])
  yield* Quota.reward("a", 2)
  expect(yield* remaining("a")).toEqual([4, 99])
  // a reward never goes beyond full
  yield* Quota.reward("a", 50)
  expect(yield* remaining("a")).toEqual([5, 100])
  yield* Quota.penalty("a", 4)
  expect(yield* remaining("a")).toEqual([1, 96])
  // a penalty at most empties a tier
  yield* Quota.penalty("a", 50)
  const empty = yield* Quota.get("a")
  expect(empty.tiers.map((t) => t.remaining)).toEqual([0, 46])
  expect(empty.allowed).toBe(false)
  // block: every check denied with the time left, nothing counted
  yield* Quota.block("b", "30 seconds")
  const blocked = yield* Quota.check("b")
  expect(blocked.allowed).toBe(false)
  expect(blocked.retryAfterMs).toBeGreaterThan(29_000)
  expect(blocked.retryAfterMs).toBeLessThanOrEqual(30_000)
  expect(blocked.tiers.map((t) => t.remaining)).toEqual([5, 100])
  // reset forgets state and block
  yield* Quota.reset("a")
  yield* Quota.reset("b")
  expect(yield* remaining("a")).toEqual([5, 100])
  expect((yield* Quota.check("b")).allowed).toBe(true)
  // bad units are typed
  for (const units of [0, -1, 1.5]) {
    const error = yield* Effect.flip(Quota.reward("a", units))
    expect(error).toBeInstanceOf(Options.InvalidOptions)
  }
  expect(yield* Effect.flip(Quota.block("a", 0))).toBeInstanceOf(Options.InvalidOptions)
})

/** a plan's blockFor: after a denial the client is blocked, and nothing is counted meanwhile */
const blockAfterDenial = Effect.gen(function* () {
  for (let i = 0; i < 5; i++) expect((yield* Quota.check("c")).allowed).toBe(true)
  const denied = yield* Quota.check("c")
  expect(denied.allowed).toBe(false)
  // the denial that starts the block reports the block, not the tier's own 100 ms
  expect(denied.retryAfterMs).toBe(60_000)
  expect(denied.deniedBy!.tier).toBe("spike")
  const next = yield* Quota.check("c")
  expect(next.allowed).toBe(false)
  expect(next.retryAfterMs).toBeGreaterThan(59_000)
  expect(next.tiers[1]!.remaining).toBe(95)
})

describe("Quota operations (rate-limiter-flexible's get, reward, penalty, block, delete)", () => {
  it.effect("memory store", () => operations.pipe(Effect.provide(memoryLayer(plan))))
  it.live("Redis store", () => operations.pipe(Effect.provide(redisLayer(plan))))
  it.effect("memory store: blockFor blocks after a denial", () =>
    Effect.gen(function* () {
      yield* blockAfterDenial
      yield* TestClock.adjust(Duration.minutes(1))
      expect((yield* Quota.check("c")).allowed).toBe(true)
    }).pipe(Effect.provide(memoryLayer(blocking)))
  )
  it.live("Redis store: blockFor blocks after a denial", () =>
    blockAfterDenial.pipe(Effect.provide(redisLayer(blocking)))
  )
})

/** 1 per second, blocked 5 s after a denial (the block outlasts either tier's own wait) */
const perSecond = (algorithm: "gcra" | "sliding-window"): QuotaConfig.PlanInput => ({
  tiers: [{ name: "rate", algorithm, limit: 1, period: "1 second" }],
  blockFor: "5 seconds"
})

describe("the denial that starts a block reports the block", () => {
  for (const algorithm of ["gcra", "sliding-window"] as const) {
    it.effect(`memory store, ${algorithm}: a client that waits the reported time is admitted`, () =>
      Effect.gen(function* () {
        expect((yield* Quota.check("k")).allowed).toBe(true)
        const denied = yield* Quota.check("k")
        expect(denied).toMatchObject({ allowed: false, retryAfterMs: 5000 })
        const error = yield* Effect.flip(Effect.void.pipe(Quota.guard("k")))
        expect(error._tag === "QuotaExceeded" && Duration.toMillis(error.retryAfter)).toBe(5000)
        yield* TestClock.adjust(Duration.millis(4999))
        expect(yield* Quota.check("k")).toMatchObject({ allowed: false, retryAfterMs: 1 })
        yield* TestClock.adjust(Duration.millis(1))
        expect((yield* Quota.check("k")).allowed).toBe(true)
      }).pipe(Effect.provide(memoryLayer(perSecond(algorithm))))
    )
  }

  // Redis counts time with its own clock: the block is shortened so the test waits it out for real
  it.live("Redis store: reports the block exactly; a client that waits that long is admitted", () =>
    Effect.gen(function* () {
      for (const [algorithm, blockMs] of [
        ["gcra", 1300],
        ["sliding-window", 2300]
      ] as const) {
        const client = `k-${algorithm}`
        const layer = redisLayer({ ...perSecond(algorithm), blockFor: blockMs })
        yield* Effect.gen(function* () {
          expect((yield* Quota.check(client)).allowed).toBe(true)
          const denied = yield* Quota.check(client)
          expect(denied).toMatchObject({ allowed: false, retryAfterMs: blockMs, source: "store" })
          yield* Effect.sleep(Duration.millis(denied.retryAfterMs))
          expect(yield* Quota.check(client)).toMatchObject({ allowed: true, source: "store" })
        }).pipe(Effect.provide(layer))
      }
    })
  )
})

describe("withQuota waits for a permit up to a bound", () => {
  it.effect("waits exactly until the permit, fails at once when none can come in time", () =>
    Effect.gen(function* () {
      let runs = 0
      const work = Effect.sync(() => ++runs)
      for (let i = 0; i < 5; i++) yield* work.pipe(Quota.withQuota("w"))
      // the 6th needs one emission interval (100 ms): within a 150 ms bound it waits
      const fiber = yield* Effect.forkChild(work.pipe(Quota.withQuota("w", { maxWait: "150 millis" })))
      yield* TestClock.adjust(Duration.millis(99))
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* Fiber.join(fiber)).toBe(6)
      // with no bound it fails at once, as guard does
      const now = yield* Effect.flip(work.pipe(Quota.withQuota("w")))
      expect(now._tag).toBe("QuotaExceeded")
      // a permit 100 ms away does not come within 50 ms: fails at once, without waiting
      const before = yield* Clock.currentTimeMillis
      const late = yield* Effect.flip(work.pipe(Quota.withQuota("w", { maxWait: "50 millis" })))
      expect(late._tag).toBe("QuotaExceeded")
      expect(yield* Clock.currentTimeMillis).toBe(before)
      // a cost no tier can hold never waits
      const never = yield* Effect.flip(work.pipe(Quota.withQuota("w", { cost: 6, maxWait: "1 hour" })))
      expect(never._tag === "QuotaExceeded" && Duration.isFinite(never.retryAfter)).toBe(false)
      expect(runs).toBe(6)
    }).pipe(Effect.provide(memoryLayer(plan)))
  )

  it.effect("refuses a maxWait that is not a finite duration of at least 0 with InvalidOptions", () =>
    Effect.gen(function* () {
      let runs = 0
      const work = Effect.sync(() => ++runs)
      for (const maxWait of [NaN, -1, "-5 millis", "1e400 seconds", Duration.infinity, "soon"]) {
        const exit = yield* Effect.exit(
          work.pipe(Quota.withQuota("v", { maxWait: maxWait as Duration.Input }))
        )
        const error = exit._tag === "Failure" ? exit.cause.reasons[0] : undefined
        expect(error !== undefined && error._tag === "Fail" && error.error).toBeInstanceOf(
          Options.InvalidOptions
        )
        expect(String(exit._tag === "Failure" && exit.cause)).toMatch(/maxWait/)
      }
      expect(runs).toBe(0)
      // 0 is "do not wait", as when absent
      expect(yield* work.pipe(Quota.withQuota("v", { maxWait: 0 }))).toBe(1)
    }).pipe(Effect.provide(memoryLayer(plan)))
  )
})

import { Options, Quota, QuotaConfig, QuotaStore } from "@sluice/core"
import * as RedisClient from "@sluice/core/RedisClient"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, FastCheck as fc, Layer, TestClock } from "effect"
import { makeStore as makeRedisStore } from "../src/internal/redisQuotaStore.js"
import { type ExactTier, ExactReference } from "./quota/exactReference.js"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const unique = (name: string) => `test:${name}:${process.pid}:${Math.random().toString(36).slice(2)}`
const MAX_PRODUCT = 2 ** 52

// rates whose emission interval is not exact in binary, a huge one, and random ones
const arbGcra = (name: string) =>
  fc
    .oneof(
      fc.constantFrom(
        { limit: 7, periodMs: 1000 },
        { limit: 6, periodMs: 1000 },
        { limit: 3, periodMs: 1000 },
        { limit: 1_000_000_000, periodMs: 3_600_000 },
        { limit: 1000, periodMs: 60_000 }
      ),
      fc.record({ limit: fc.integer({ min: 1, max: 50 }), periodMs: fc.integer({ min: 1, max: 10_000 }) })
    )
    .chain((base) =>
      fc
        .integer({ min: 1, max: Math.min(2 * base.limit, Math.floor(MAX_PRODUCT / base.periodMs)) })
        .map((burst): ExactTier => ({ name, algorithm: "gcra", ...base, burst }))
    )

const arbWindow = (name: string) =>
  fc
    .oneof(
      fc.constantFrom({ limit: 7, periodMs: 1000 }, { limit: 1_000_000_000, periodMs: 3_600_000 }),
      fc.record({ limit: fc.integer({ min: 1, max: 20 }), periodMs: fc.integer({ min: 1, max: 5000 }) })
    )
    .map((base): ExactTier => ({ name, algorithm: "sliding-window", ...base }))

/** a plan's blockFor (ms): short ones end within a run's steps, long ones outlast several */
const arbBlock = fc.oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 3000 }))

const arbPlan = fc
  .integer({ min: 1, max: 3 })
  .chain((n) =>
    fc.tuple(...Array.from({ length: n }, (_, i) => fc.oneof(arbGcra(`t${i}`), arbWindow(`t${i}`))))
  )

/** a cost choice, made concrete against the plan's smallest capacity */
const arbCost = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ kind: "peek" as const }) },
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 3 }).map((n) => ({ kind: "units" as const, n })) },
  { weight: 2, arbitrary: fc.constantFrom(0.3, 0.5, 1).map((f) => ({ kind: "share" as const, f })) },
  { weight: 1, arbitrary: fc.constant({ kind: "over" as const }) }
)
type CostChoice = typeof arbCost extends fc.Arbitrary<infer A> ? A : never
const costOf = (choice: CostChoice, minCap: number) =>
  choice.kind === "peek"
    ? 0
    : choice.kind === "units"
      ? Math.min(choice.n, minCap)
      : choice.kind === "share"
        ? Math.max(1, Math.floor(minCap * choice.f))
        : minCap + 1

const arbDt = fc.oneof(
  fc.constant(0),
  fc.integer({ min: 0, max: 5 }),
  fc.integer({ min: 0, max: 400 }),
  fc.integer({ min: 0, max: 5000 })
)

/** a Clock whose time the test sets (the memory store reads it per check) */
const manualClock = (): Clock.Clock & { now: number } => {
  const state = { now: 0 }
  const clock = {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => state.now,
    unsafeCurrentTimeNanos: () => BigInt(state.now) * 1_000_000n,
    currentTimeMillis: Effect.sync(() => state.now),
    currentTimeNanos: Effect.sync(() => BigInt(state.now) * 1_000_000n),
    sleep: () => Effect.void
  }
  return Object.defineProperty(clock, "now", {
    get: () => state.now,
    set: (n: number) => {
      state.now = n
    }
  }) as unknown as Clock.Clock & { now: number }
}

const capacityOf = (tier: ExactTier) => (tier.algorithm === "gcra" ? (tier.burst ?? tier.limit) : tier.limit)

const planInput = (tiers: ReadonlyArray<ExactTier>, blockForMs = 0): QuotaConfig.PlanInput => ({
  tiers: tiers.map((t) =>
    t.algorithm === "gcra"
      ? { name: t.name, algorithm: "gcra", limit: t.limit, period: t.periodMs, burst: t.burst! }
      : { name: t.name, algorithm: "sliding-window", limit: t.limit, period: t.periodMs }
  ),
  ...(blockForMs > 0 ? { blockFor: blockForMs } : {})
})

const compile = (tiers: ReadonlyArray<ExactTier>, blockForMs = 0) =>
  Effect.orDie(Options.decode("test", QuotaConfig.Plan)(planInput(tiers, blockForMs))).pipe(
    Effect.map(QuotaConfig.compile)
  )

/** every field of every tier equals the reference; retry-after is the first admitting ms */
const expectExact = (
  context: string,
  reference: ExactReference,
  now: number,
  cost: number,
  result: QuotaStore.StoreResult,
  expected: ReturnType<ExactReference["check"]>
) => {
  expect(result.allowed, context).toBe(expected.allowed)
  expect(
    result.tiers.map((t) => [t.allowed, t.remaining, t.resetMs, t.retryAfterMs]),
    context
  ).toEqual(expected.tiers.map((t) => [t.allowed, t.remaining, t.resetMs, t.retryAfterMs]))
  expect(result.blockedMs ?? 0, context).toBe(expected.blockedMs)
  if (!result.allowed) {
    const retry = Math.max(...result.tiers.filter((t) => !t.allowed).map((t) => t.retryAfterMs))
    if (Number.isFinite(retry)) {
      const units = cost === 0 ? 1 : cost
      expect(reference.passes(now + retry, units), context).toBe(true)
      expect(reference.passes(now + retry - 1, units), context).toBe(false)
    }
  }
}

describe("Quota arithmetic is exact (BigInt reference, epoch-scale clocks)", () => {
  it.effect(
    "full bursts at 7/s and 6/s are admitted at epoch magnitude; remaining and retry-after exact",
    () =>
      Effect.gen(function* () {
        const store = yield* QuotaStore.makeMemory()
        yield* TestClock.setTime(1_800_000_000_123)
        const seven = yield* compile([{ name: "s", algorithm: "gcra", limit: 7, periodMs: 1000, burst: 5 }])
        const results = Array.from({ length: 6 }, () => store.unsafeCheck("c", seven, 1))
        expect(results.map((r) => r.allowed)).toEqual([true, true, true, true, true, false])
        expect(results.map((r) => r.tiers[0]!.remaining)).toEqual([4, 3, 2, 1, 0, 0])
        // the 6th: one emission interval (1000 / 7 ms) after the first, rounded up to a whole ms
        expect(results[5]!.tiers[0]!.retryAfterMs).toBe(143)
        expect(results[4]!.tiers[0]!.resetMs).toBe(715) // 5 × 1000/7 = 714.28…
        const six = yield* compile([{ name: "s", algorithm: "gcra", limit: 6, periodMs: 1000, burst: 2 }])
        expect([store.unsafeCheck("d", six, 1).allowed, store.unsafeCheck("d", six, 1).allowed]).toEqual([
          true,
          true
        ])
        const hourly = yield* compile([
          { name: "h", algorithm: "gcra", limit: 1_000_000_000, periodMs: 3_600_000, burst: 1_000_000_000 }
        ])
        expect(store.unsafeCheck("e", hourly, 1_000_000_000).allowed).toBe(true)
        const next = store.unsafeCheck("e", hourly, 1)
        expect(next).toMatchObject({ allowed: false })
        expect(next.tiers[0]!.retryAfterMs).toBe(1) // 3.6 µs per unit: the next whole ms
      })
  )

  it.effect("memory store: random plans and steps agree with the reference, field for field", () =>
    Effect.gen(function* () {
      const samples = fc.sample(
        fc.tuple(
          arbPlan,
          fc.array(fc.record({ dt: arbDt, cost: arbCost }), { minLength: 1, maxLength: 60 }),
          fc.integer({ min: 0, max: 1_000_000_000 })
        ),
        { numRuns: 300, seed: 15 }
      )
      let denied = 0
      let allowed = 0
      for (const [tiers, steps, offset] of samples) {
        const plan = yield* compile(tiers)
        const store = yield* QuotaStore.makeMemory()
        const reference = new ExactReference(tiers)
        const minCap = Math.min(...tiers.map(capacityOf))
        let now = 1_800_000_000_000 + offset
        yield* TestClock.setTime(now)
        const history: Array<[number, number]> = []
        for (const step of steps) {
          now += step.dt
          yield* TestClock.setTime(now)
          const cost = costOf(step.cost, minCap)
          history.push([step.dt, cost])
          const result = store.unsafeCheck("c", plan, cost)
          expect(result.now).toBe(now)
          const expected = reference.check(now, cost)
          expectExact(JSON.stringify({ tiers, history }), reference, now, cost, result, expected)
          if (result.allowed) allowed++
          else denied++
        }
      }
      // both outcomes are exercised
      expect(denied).toBeGreaterThan(500)
      expect(allowed).toBeGreaterThan(500)
    })
  )

  it.effect(
    "memory store with blockFor: random plans and steps agree with the reference, field for field",
    () =>
      Effect.gen(function* () {
        const samples = fc.sample(
          fc.tuple(
            arbPlan,
            arbBlock,
            fc.array(fc.record({ dt: arbDt, cost: arbCost }), { minLength: 1, maxLength: 60 }),
            fc.integer({ min: 0, max: 1_000_000_000 })
          ),
          { numRuns: 300, seed: 17 }
        )
        let blocks = 0
        let blockedDenials = 0
        let allowed = 0
        for (const [tiers, blockForMs, steps, offset] of samples) {
          const plan = yield* compile(tiers, blockForMs)
          const store = yield* QuotaStore.makeMemory()
          const reference = new ExactReference(tiers, blockForMs)
          const minCap = Math.min(...tiers.map(capacityOf))
          let now = 1_800_000_000_000 + offset
          const history: Array<[number, number]> = []
          let blockedUntil = -Infinity
          for (const step of steps) {
            now += step.dt
            yield* TestClock.setTime(now)
            const cost = costOf(step.cost, minCap)
            history.push([step.dt, cost])
            const result = store.unsafeCheck("c", plan, cost)
            const expected = reference.check(now, cost)
            expectExact(
              JSON.stringify({ tiers, blockForMs, history }),
              reference,
              now,
              cost,
              result,
              expected
            )
            if (result.allowed) allowed++
            else if (blockedUntil > now) blockedDenials++
            else if (cost > 0) {
              blocks++
              blockedUntil = now + blockForMs
            }
          }
        }
        // blocks start, deny while in force, and end
        expect(blocks).toBeGreaterThan(300)
        expect(blockedDenials).toBeGreaterThan(100)
        expect(allowed).toBeGreaterThan(500)
      })
  )

  it.live("Redis store: random plans agree with the reference and with the memory store replayed", () =>
    redisAgainstReference(fc.constant(0), 60, 16, 30)
  )

  it.live("Redis store with blockFor: random plans agree with the reference and the memory store", () =>
    // blocks short enough to end within a run's sleeps
    redisAgainstReference(fc.integer({ min: 1, max: 150 }), 30, 18, 15)
  )
})

/**
 * Random plans and steps on the Redis store (server time), each decision held to the reference
 * and, replayed at the same instants, to the memory store. The first `baked` plans get scripts
 * with their numbers written in, the others share the per-shape scripts that take them as
 * arguments: both kinds are held to the reference.
 */
const redisAgainstReference = (
  arbBlockFor: fc.Arbitrary<number>,
  numRuns: number,
  seed: number,
  baked: number
) =>
  Effect.gen(function* () {
    const { client } = yield* RedisClient.RedisClient
    const store = yield* makeRedisStore(client, unique("exact") + ":", baked)
    const samples = fc.sample(
      fc.tuple(
        arbPlan,
        arbBlockFor,
        fc.array(
          fc.record({
            sleep: fc.oneof(
              { weight: 8, arbitrary: fc.integer({ min: 0, max: 2 }) },
              { weight: 1, arbitrary: fc.integer({ min: 20, max: 200 }) }
            ),
            cost: arbCost
          }),
          { minLength: 1, maxLength: 40 }
        )
      ),
      { numRuns, seed }
    )
    let checks = 0
    let denied = 0
    let blocked = 0
    for (const [index, [tiers, blockForMs, steps]] of samples.entries()) {
      const plan = yield* compile(tiers, blockForMs)
      const reference = new ExactReference(tiers, blockForMs)
      const minCap = Math.min(...tiers.map(capacityOf))
      const seen: Array<{ now: number; cost: number; result: QuotaStore.StoreResult }> = []
      for (const step of steps) {
        if (step.sleep > 0) yield* Effect.sleep(Duration.millis(step.sleep))
        const cost = costOf(step.cost, minCap)
        const result = yield* store.check(`c${index}`, plan, cost)
        // Redis' TIME, floored to the ms: an epoch-scale clock
        expect(Number.isInteger(result.now) && result.now > 1.7e12).toBe(true)
        const expected = reference.check(result.now, cost)
        expectExact(
          JSON.stringify({ tiers, blockForMs, seen: seen.map((s) => [s.now, s.cost]) }),
          reference,
          result.now,
          cost,
          result,
          expected
        )
        seen.push({ now: result.now, cost, result })
        checks++
        if (!result.allowed) denied++
        if ((result.blockedMs ?? 0) > 0) blocked++
      }
      // the memory store, fed the same checks at the same instants, decides exactly alike
      const clock = manualClock()
      const memory = yield* Effect.withClock(QuotaStore.makeMemory(), clock)
      for (const { cost, now, result } of seen) {
        clock.now = now
        const local = memory.unsafeCheck("c", plan, cost)
        expect(local).toEqual(result)
      }
    }
    expect(checks).toBeGreaterThan(numRuns * 5)
    expect(denied).toBeGreaterThan((numRuns * 5) / 6)
    if (blocked === 0) expect(samples.every(([, blockForMs]) => blockForMs === 0)).toBe(true)
    else expect(blocked).toBeGreaterThan(numRuns)
  }).pipe(Effect.scoped, Effect.provide(RedisClient.layer({ url: REDIS_URL })))

describe("Redis store: a client whose plan changes", () => {
  const plans: ReadonlyArray<QuotaConfig.PlanInput> = [
    {
      tiers: [
        { name: "spike", algorithm: "gcra", limit: 5, period: 1000, burst: 4 },
        { name: "count", algorithm: "sliding-window", limit: 9, period: "1 day" }
      ]
    },
    // spike dropped, count's numbers changed, a new tier
    {
      tiers: [
        { name: "count", algorithm: "sliding-window", limit: 12, period: "1 day" },
        { name: "minute", algorithm: "sliding-window", limit: 4, period: "1 minute" }
      ]
    },
    // spike back with other numbers (its state was dropped with plan 1), count as in plan 0
    {
      tiers: [
        { name: "spike", algorithm: "gcra", limit: 7, period: 1000, burst: 5 },
        { name: "count", algorithm: "sliding-window", limit: 9, period: "1 day" }
      ]
    },
    // a tier that kept its name but not its algorithm starts anew
    { tiers: [{ name: "count", algorithm: "gcra", limit: 3, period: 1000, burst: 3 }] }
  ]

  it.live(
    "keeps the state of tiers that kept name and algorithm, decision for decision as the memory store",
    () =>
      Effect.gen(function* () {
        const { client } = yield* RedisClient.RedisClient
        // plan 0's script has its numbers written in, the others take them as arguments
        const store = yield* makeRedisStore(client, unique("reshape") + ":", 1)
        const compiled = yield* Effect.forEach(plans, (plan) =>
          Effect.orDie(
            Options.decode("test", QuotaConfig.Plan)(plan as typeof QuotaConfig.Plan.Encoded)
          ).pipe(Effect.map(QuotaConfig.compile))
        )
        const steps = [0, 0, 0, 1, 1, 0, 2, 2, 2, 2, 1, 1, 1, 3, 3, 3, 3, 0, 0, 2, 1, 0, 0, 0, 0]
        const seen: Array<{ plan: number; now: number; result: QuotaStore.StoreResult }> = []
        for (const plan of steps) {
          const result = yield* store.check("p", compiled[plan]!, 1)
          seen.push({ plan, now: result.now, result })
        }
        const clock = manualClock()
        const memory = yield* Effect.withClock(QuotaStore.makeMemory(), clock)
        for (const { now, plan, result } of seen) {
          clock.now = now
          const local = memory.unsafeCheck("p", compiled[plan]!, 1)
          expect(local, `plan ${plan} at ${now}`).toEqual({ ...result, now: local.now })
        }
        // the daily count carried across plans 0, 1 and 2 (it started anew under plan 3)
        expect(seen.filter((s) => s.result.allowed).length).toBeGreaterThan(10)
        expect(seen.some((s) => !s.result.allowed)).toBe(true)

        // a penalty under one plan is seen under another that shares the tier
        const before = yield* store.check("q", compiled[1]!, 0)
        yield* store.adjust("q", compiled[0]!, 5)
        const after = yield* store.check("q", compiled[1]!, 0)
        expect(Math.floor(before.now / 86_400_000)).toBe(Math.floor(after.now / 86_400_000))
        expect(after.tiers.map((t) => t.remaining)).toEqual([7, 4])
        // and a reward under the second plan gives it back to the first
        yield* store.adjust("q", compiled[1]!, -2)
        expect((yield* store.check("q", compiled[0]!, 0)).tiers.map((t) => t.remaining)).toEqual([4, 6])
      }).pipe(Effect.scoped, Effect.provide(RedisClient.layer({ url: REDIS_URL })))
  )
})

describe("Quota: bad input is typed, never a defect", () => {
  const layer = (plan: QuotaConfig.PlanInput, options: Quota.QuotaOptions = {}) =>
    Quota.layer(options).pipe(
      Layer.provideMerge(QuotaStore.layerMemory()),
      Layer.provideMerge(QuotaConfig.layer({ default: plan }))
    )
  const plan: QuotaConfig.PlanInput = {
    tiers: [
      { name: "spike", algorithm: "gcra", limit: 10, period: "1 second", burst: 5 },
      { name: "count", algorithm: "sliding-window", limit: 100, period: "1 hour" }
    ]
  }

  it.effect(
    "cost 0 peeks; fractional, negative and NaN costs are InvalidOptions; above every bucket: denied, never",
    () =>
      Effect.gen(function* () {
        const peek = yield* Quota.check("a", { cost: 0 })
        expect(peek).toMatchObject({ allowed: true, source: "store" })
        expect(peek.tiers.map((t) => t.remaining)).toEqual([5, 100])
        expect((yield* Quota.get("a")).tiers.map((t) => t.remaining)).toEqual([5, 100])
        for (const cost of [1.5, -1, Number.NaN, Infinity]) {
          const error = yield* Effect.flip(Quota.check("a", { cost }))
          expect(error).toBeInstanceOf(Options.InvalidOptions)
          expect(error.message).toMatch(/cost/)
        }
        const never = yield* Quota.check("a", { cost: 6 })
        expect(never).toMatchObject({ allowed: false, retryAfterMs: Infinity })
        expect(never.deniedBy).toMatchObject({ tier: "spike", retryAfterMs: Infinity })
        // the count tier could hold it: its own verdict stays exact
        expect(never.tiers[1]).toMatchObject({ tier: "count", allowed: true, retryAfterMs: 0 })
        const error = yield* Effect.flip(Effect.void.pipe(Quota.guard("a", { cost: 6 })))
        expect(error._tag === "QuotaExceeded" && Duration.isFinite(error.retryAfter)).toBe(false)
        // nothing was consumed by any of these
        expect((yield* Quota.get("a")).tiers.map((t) => t.remaining)).toEqual([5, 100])
      }).pipe(Effect.provide(layer(plan)))
  )

  it.effect("periods too fine or too long for exact arithmetic are rejected naming the field", () =>
    Effect.gen(function* () {
      for (const period of ["0.5 micros", "1500 micros", 0.25] as const) {
        const error = yield* Effect.flip(
          QuotaConfig.make({ default: { tiers: [{ name: "x", algorithm: "gcra", limit: 1, period }] } })
        )
        expect(error.message).toMatch(/period/)
        expect(error.message).toMatch(/whole number of milliseconds/)
      }
      const huge = yield* Effect.flip(
        QuotaConfig.make({
          default: {
            tiers: [{ name: "x", algorithm: "sliding-window", limit: 1_000_000_000, period: "1 day" }]
          }
        })
      )
      expect(huge.message).toMatch(/2\^52/)
      // 1e9 per hour is fine
      yield* QuotaConfig.make({
        default: { tiers: [{ name: "x", algorithm: "gcra", limit: 1_000_000_000, period: "1 hour" }] }
      })
    })
  )

  it.effect("client ids above the bound are stored as a prefix and their SHA-256", () =>
    Effect.gen(function* () {
      const quota = yield* Quota.Quota
      const store = yield* QuotaStore.QuotaStore
      const long = "k".repeat(10_000)
      const id = quota.storedId(long)
      expect(id.length).toBe(100)
      expect(id).toMatch(/^k{35}#[0-9a-f]{64}$/)
      expect(quota.storedId("short")).toBe("short")
      // two long ids that share the prefix are still two clients
      for (let i = 0; i < 5; i++) yield* Quota.check(long)
      expect((yield* Quota.check(long)).allowed).toBe(false)
      expect((yield* Quota.check(long + "x")).allowed).toBe(true)
      expect(yield* (store as QuotaStore.MemoryStore).size).toBe(2)
      const bad = yield* Effect.flip(
        Quota.make({ maxClientIdLength: 10 }).pipe(Effect.scoped, Effect.provide(layer(plan)))
      )
      expect(bad.message).toMatch(/maxClientIdLength/)
    }).pipe(Effect.provide(layer(plan, { maxClientIdLength: 100 })))
  )
})

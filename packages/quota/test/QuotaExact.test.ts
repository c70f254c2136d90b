import { Options } from "@sluice/core"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Layer } from "effect"
import fc from "fast-check"
import { type Transport, transports } from "./quota/transports.js"
import { arbCost, arbPlan, capacityOf, costOf, expectExact } from "../../kernel/test/quota/ExactCases.js"
import { type ExactTier, ExactReference } from "../../kernel/test/quota/ExactReference.js"

const unique = (name: string) => `test:${name}:${process.pid}:${Math.random().toString(36).slice(2)}`
/** a Clock whose time the test sets (the memory store reads it per check) */
const manualClock = (): Clock.Clock & { now: number } => {
  const state = { now: 0 }
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: () => state.now,
    currentTimeNanosUnsafe: () => BigInt(state.now) * 1_000_000n,
    monotonicTimeNanosUnsafe: () => BigInt(state.now) * 1_000_000n,
    currentTimeMillis: Effect.sync(() => state.now),
    currentTimeNanos: Effect.sync(() => BigInt(state.now) * 1_000_000n),
    monotonicTimeNanos: Effect.sync(() => BigInt(state.now) * 1_000_000n),
    sleep: () => Effect.void
  }
  return Object.defineProperty(clock, "now", {
    get: () => state.now,
    set: (n: number) => {
      state.now = n
    }
  }) as unknown as Clock.Clock & { now: number }
}

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

describe.each(transports)(
  "Quota arithmetic is exact (BigInt reference, epoch-scale clocks, $name)",
  (transport) => {
    it.live("Redis store: random plans agree with the reference and with the memory store replayed", () =>
      redisAgainstReference(transport, fc.constant(0), 60, 16, 30)
    )

    it.live("Redis store with blockFor: random plans agree with the reference and the memory store", () =>
      // blocks short enough to end within a run's sleeps
      redisAgainstReference(transport, fc.integer({ min: 1, max: 150 }), 30, 18, 15)
    )

    it.live(
      "Redis store restarted at any point: the floor each check brings keeps every decision exact",
      () => redisAgainstReference(transport, fc.integer({ min: 0, max: 150 }), 40, 19, 20, true)
    )
  }
)

/**
 * Random plans and steps on the Redis store (server time), each decision held to the reference
 * and, replayed at the same instants, to the memory store. The first `baked` plans get scripts
 * with their numbers written in, the others share the per-shape scripts that take them as
 * arguments: both kinds are held to the reference.
 */
const redisAgainstReference = (
  transport: Transport,
  arbBlockFor: fc.Arbitrary<number>,
  numRuns: number,
  seed: number,
  baked: number,
  restarts = false
) =>
  Effect.gen(function* () {
    const store = yield* transport.makeStore(unique("exact") + ":", baked)
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
    let restarted = 0
    let raised = 0
    for (const [index, [tiers, blockForMs, steps]] of samples.entries()) {
      const plan = yield* compile(tiers, blockForMs)
      const reference = new ExactReference(tiers, blockForMs)
      const minCap = Math.min(...tiers.map(capacityOf))
      const seen: Array<{ now: number; cost: number; result: QuotaStore.StoreResult }> = []
      for (const [at, step] of steps.entries()) {
        if (step.sleep > 0) yield* Effect.sleep(Duration.millis(step.sleep))
        const cost = costOf(step.cost, minCap)
        const previous = seen[seen.length - 1]?.result
        // every fourth check, Redis forgets the client (as a restart without persistence does)
        // and the check brings the state the last answer carried: decisions stay exact
        const restart = restarts && previous !== undefined && (index + at) % 4 === 3
        if (restart) {
          yield* store.reset(`c${index}`)
          restarted++
        }
        // with restarts every check offers the floor, as `Quota` does: the store sends it only
        // when the client's key is gone (and for a while after that)
        const result =
          restarts && previous !== undefined
            ? yield* checkWithFloor(store, `c${index}`, plan, cost, floorOf(previous))
            : yield* store.check(`c${index}`, plan, cost)
        if (result.raised === true) raised++
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
      const memory = yield* Effect.provideService(QuotaStore.makeMemory(), Clock.Clock, clock)
      for (const { cost, now, result } of seen) {
        clock.now = now
        const local = memory.checkUnsafe("c", plan, cost)
        const { raised: _raised, state: _state, ...decided } = result
        expect(local).toEqual(decided)
      }
    }
    expect(checks).toBeGreaterThan(numRuns * 5)
    expect(denied).toBeGreaterThan((numRuns * 5) / 6)
    if (blocked === 0) expect(samples.every(([, blockForMs]) => blockForMs === 0)).toBe(true)
    else expect(blocked).toBeGreaterThan(numRuns)
    if (restarts) {
      expect(restarted).toBeGreaterThan(numRuns / 2)
      // most lost states still held something spent: those were raised back
      expect(raised).toBeGreaterThan(restarted / 3)
    } else expect(raised).toBe(0)
  }).pipe(Effect.scoped)

/** The floor a caller holds after an answer: its block, then the state the answer carried. */
const floorOf = (result: QuotaStore.StoreResult): Array<number> => [
  (result.blockedMs ?? 0) > 0 ? result.now + result.blockedMs! : 0,
  ...result.state!
]

/** A check that brings a floor (as `Quota` sends its fallback's). */
const checkWithFloor = (
  store: QuotaStore.Store,
  client: string,
  plan: QuotaConfig.CompiledPlan,
  cost: number,
  floor: ReadonlyArray<number>
) =>
  Effect.callback<QuotaStore.StoreResult, QuotaStore.QuotaStoreError>((resume) =>
    store.checkCallback!(
      client,
      plan,
      cost,
      (error, result) => resume(error === undefined ? Effect.succeed(result!) : Effect.fail(error)),
      () => floor
    )
  )

describe.each(transports)("Redis store: a client whose plan changes ($name)", (transport) => {
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
        // plan 0's script has its numbers written in, the others take them as arguments
        const store = yield* transport.makeStore(unique("reshape") + ":", 1)
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
        const memory = yield* Effect.provideService(QuotaStore.makeMemory(), Clock.Clock, clock)
        for (const { now, plan, result } of seen) {
          clock.now = now
          const local = memory.checkUnsafe("p", compiled[plan]!, 1)
          const { raised: _raised, state: _state, ...decided } = result
          expect(local, `plan ${plan} at ${now}`).toEqual({ ...decided, now: local.now })
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
      }).pipe(Effect.scoped)
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

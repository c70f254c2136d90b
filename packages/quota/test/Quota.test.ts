import { Errors, Options } from "@sluice/core"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Clock, Duration, Effect, Exit, Fiber, Layer, Metric } from "effect"
import { TestClock } from "effect/testing"
import fc from "fast-check"
import { Reference, type RefTier } from "./quota/reference.js"

const twoTier: QuotaConfig.PlanInput = {
  tiers: [
    { name: "spike", algorithm: "gcra", limit: 10, period: "1 second", burst: 5 },
    { name: "count", algorithm: "sliding-window", limit: 8, period: "10 seconds" }
  ]
}

/** The error of an exit that failed with exactly one typed failure (3.x's `cause._tag === "Fail"`). */
const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined => {
  if (!Exit.isFailure(exit) || exit.cause.reasons.length !== 1) return undefined
  const reason = exit.cause.reasons[0]!
  return Cause.isFailReason(reason) ? reason.error : undefined
}

const quotaLayer = (plan: QuotaConfig.PlanInput, options: Quota.QuotaOptions = {}, maxClients?: number) =>
  Quota.layer(options).pipe(
    Layer.provideMerge(QuotaStore.layerMemory(maxClients === undefined ? {} : { maxClients })),
    Layer.provideMerge(QuotaConfig.layer({ default: plan }))
  )

const refTiers = (plan: QuotaConfig.PlanInput): Array<RefTier> =>
  plan.tiers.map((tier) => {
    const period = Duration.toMillis(Duration.fromInputUnsafe(tier.period as Duration.Input))
    return tier.algorithm === "gcra"
      ? { name: tier.name, algorithm: "gcra", capacity: tier.burst ?? tier.limit, unit: period / tier.limit }
      : { name: tier.name, algorithm: "sliding-window", capacity: tier.limit, unit: period }
  })

// plans whose gcra emission interval is a whole number of milliseconds, so the
// reference's integer arithmetic is exact
const arbTier = (name: string) =>
  fc.oneof(
    fc
      .record({
        limit: fc.integer({ min: 1, max: 8 }),
        em: fc.integer({ min: 1, max: 60 }),
        burst: fc.integer({ min: 1, max: 8 })
      })
      .map(({ limit, em, burst }) => ({
        name,
        algorithm: "gcra" as const,
        limit,
        period: limit * em,
        burst
      })),
    fc
      .record({ limit: fc.integer({ min: 1, max: 8 }), period: fc.integer({ min: 1, max: 400 }) })
      .map(({ limit, period }) => ({ name, algorithm: "sliding-window" as const, limit, period }))
  )

const arbPlan = fc
  .integer({ min: 1, max: 3 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => arbTier(`t${i}`))))
  .map((tiers) => ({ tiers }) as unknown as QuotaConfig.PlanInput)

const arbSteps = fc.array(
  fc.record({ dt: fc.integer({ min: 0, max: 120 }), cost: fc.integer({ min: 1, max: 3 }) }),
  {
    minLength: 1,
    maxLength: 60
  }
)

describe("Quota (memory store)", () => {
  it.effect("GCRA and sliding-window decisions match a brute-force reference under TestClock", () =>
    Effect.gen(function* () {
      const samples = fc.sample(fc.tuple(arbPlan, arbSteps), { numRuns: 100, seed: 7 })
      for (const [plan, steps] of samples) {
        const tiers = refTiers(plan)
        const minCap = Math.min(...tiers.map((t) => t.capacity))
        yield* Effect.gen(function* () {
          const reference = new Reference(tiers)
          // windows are aligned to the clock (not to the first request): TestClock's time
          // carries over from one sample to the next, so read it
          let now = yield* Clock.currentTimeMillis
          const history: Array<[number, number]> = []
          for (const step of steps) {
            yield* TestClock.adjust(Duration.millis(step.dt))
            now += step.dt
            const cost = Math.min(step.cost, minCap)
            const decision = yield* Quota.check("c", { cost })
            const expected = reference.check(now, cost)
            history.push([now, cost])
            const context = JSON.stringify({ plan, history })
            expect(decision.allowed, context).toBe(expected.allowed)
            expect(
              decision.tiers.map((t) => [t.allowed, t.remaining]),
              context
            ).toEqual(expected.tiers.map((t) => [t.allowed, t.remaining]))
            if (!decision.allowed) {
              // retryAfter is exact: the request passes then, and not a millisecond earlier
              expect(decision.retryAfterMs).toBeGreaterThan(0)
              expect(reference.peek(now + decision.retryAfterMs, cost).allowed, context).toBe(true)
              expect(reference.peek(now + decision.retryAfterMs - 1, cost).allowed, context).toBe(false)
            } else expect(decision.retryAfterMs).toBe(0)
          }
        }).pipe(Effect.provide(quotaLayer(plan)))
      }
    })
  )

  it.effect("a request passes only if every tier passes, and a denied request consumes nothing", () =>
    Effect.gen(function* () {
      const results: Array<boolean> = []
      for (let i = 0; i < 7; i++) results.push((yield* Quota.check("acme")).allowed)
      // the burst of 5 is spent; the two denied checks did not eat into "count"
      expect(results).toEqual([true, true, true, true, true, false, false])
      const denied = yield* Quota.check("acme")
      expect(denied.deniedBy?.tier).toBe("spike")
      expect(denied.tiers.find((t) => t.tier === "count")).toMatchObject({ allowed: true, remaining: 3 })
      yield* TestClock.adjust(Duration.millis(300))
      // 3 spike tokens back, 3 count units left
      for (let i = 0; i < 3; i++) expect((yield* Quota.check("acme")).allowed).toBe(true)
      const exhausted = yield* Quota.check("acme")
      expect(exhausted.allowed).toBe(false)
      // both tiers deny: deniedBy is the first, retryAfter the longest wait
      expect(exhausted.deniedBy?.tier).toBe("spike")
      expect(exhausted.tiers.map((t) => [t.tier, t.allowed, t.remaining])).toEqual([
        ["spike", false, 0],
        ["count", false, 0]
      ])
      // the sliding-window counter: 8 units in window [0, 10 s); in the next window they weigh
      // 8 × (1 − elapsed / 10 s), which leaves room for one unit once elapsed ≥ 1.25 s
      expect(exhausted.retryAfterMs).toBe(11_250 - 300)
      // another client is counted separately
      expect((yield* Quota.check("other")).allowed).toBe(true)
    }).pipe(Effect.provide(quotaLayer(twoTier)))
  )

  it.effect("guard fails with QuotaExceeded naming the tier", () =>
    Effect.gen(function* () {
      let runs = 0
      const work = Effect.sync(() => ++runs)
      for (let i = 0; i < 5; i++) yield* work.pipe(Quota.guard("g1"))
      const exit = yield* Effect.exit(Quota.guard(work, "g1", { cost: 1 }))
      expect(runs).toBe(5)
      expect(Exit.isFailure(exit)).toBe(true)
      const error = failureOf(exit)
      if (error !== undefined && error._tag === "QuotaExceeded") {
        expect(error).toBeInstanceOf(Errors.QuotaExceeded)
        expect(error).toMatchObject({ tier: "spike", limit: 5, remaining: 0, client: "g1" })
        expect(Duration.toMillis(error.retryAfter)).toBe(100)
      }
    }).pipe(Effect.provide(quotaLayer(twoTier)))
  )

  it.effect(
    "plans change while running; an invalid plan is rejected naming the field and the previous stays",
    () =>
      Effect.gen(function* () {
        const config = yield* QuotaConfig.QuotaConfig
        const single = {
          tiers: [{ name: "n", algorithm: "sliding-window" as const, limit: 2, period: 1000 }]
        }
        yield* config.setPlan("vip", single)
        expect((yield* Quota.check("vip")).tiers.map((t) => t.tier)).toEqual(["n"])
        expect((yield* Quota.check("vip")).allowed).toBe(true)
        expect((yield* Quota.check("vip")).allowed).toBe(false)

        const bad = yield* Effect.exit(
          config.setPlan("vip", {
            tiers: [{ name: "n", algorithm: "sliding-window", limit: -3, period: 1000 }]
          })
        )
        expect(Exit.isFailure(bad)).toBe(true)
        const badError = failureOf(bad)
        if (badError !== undefined) {
          expect(badError).toBeInstanceOf(Options.InvalidOptions)
          expect(badError.message).toMatch(/limit/)
          expect(badError.message).toMatch(/vip/)
        }
        const badPeriod = yield* Effect.exit(
          config.setDefault({ tiers: [{ name: "x", algorithm: "gcra", limit: 1, period: "soon" as any }] })
        )
        expect(Exit.isFailure(badPeriod) && String(badPeriod.cause)).toMatch(/period/)
        const dup = yield* Effect.exit(
          config.setDefault({
            tiers: [
              { name: "x", algorithm: "gcra", limit: 1, period: 10 },
              { name: "x", algorithm: "gcra", limit: 1, period: 10 }
            ]
          })
        )
        expect(Exit.isFailure(dup) && String(dup.cause)).toMatch(/duplicate tier name/)
        // the previous plan is still in force
        expect((yield* config.plan("vip")).tiers[0]!.limit).toBe(2)
        expect((yield* Quota.check("vip")).tiers.map((t) => t.tier)).toEqual(["n"])

        // raising the limit takes effect on the next check, keeping the tier's state
        yield* config.setPlan("vip", {
          tiers: [{ name: "n", algorithm: "sliding-window", limit: 3, period: 1000 }]
        })
        expect((yield* Quota.check("vip")).allowed).toBe(true)
        expect((yield* Quota.check("vip")).allowed).toBe(false)
        yield* config.removePlan("vip")
        expect((yield* Quota.check("vip")).tiers.map((t) => t.tier)).toEqual(["spike", "count"])
      }).pipe(Effect.provide(quotaLayer(twoTier)))
  )

  it.effect("the memory store is bounded and evicts idle clients", () =>
    Effect.gen(function* () {
      const store = yield* QuotaStore.makeMemory({ maxClients: 1000 })
      const plan = QuotaConfig.compile(
        yield* Effect.orDie(
          Options.decode("test", QuotaConfig.Plan)(twoTier as typeof QuotaConfig.Plan.Encoded)
        )
      )
      for (let i = 0; i < 5000; i++) store.checkUnsafe(`client-${i}`, plan, 1)
      // two generations of at most 500 clients each
      const size = yield* store.size
      expect(size).toBeLessThanOrEqual(1000)
      expect(size).toBeGreaterThanOrEqual(500)
      // the most recent clients kept their state
      expect(store.checkUnsafe("client-4999", plan, 1).tiers[0]!.remaining).toBe(3)
      // after every tier is full again (the 10 s counter's window [0, 10 s) weighs in until 20 s),
      // clients are swept away as traffic continues
      yield* TestClock.adjust(Duration.seconds(21))
      for (let i = 0; i < 400; i++) store.checkUnsafe(`late-${i}`, plan, 1)
      expect(yield* store.size).toBe(400)
      // a client whose state is full again is indistinguishable from a new one
      expect(store.checkUnsafe("client-4999", plan, 1).tiers[0]!.remaining).toBe(4)
    })
  )

  it.effect(
    "a remote store that never answers: the deadline (TestClock) decides, then the breaker stops calling it",
    () =>
      Effect.gen(function* () {
        let calls = 0
        // a remote store whose calls never complete, like a paused Redis
        const silent: QuotaStore.Store = {
          name: "silent",
          remote: true,
          check: () => Effect.never,
          checkCallback: () => {
            calls++
          },
          adjust: () => Effect.void,
          block: () => Effect.void,
          reset: () => Effect.void
        }
        const layer = Quota.layer({
          mode: "fail-open",
          deadline: "15 millis",
          breaker: { consecutiveFailures: 3, minFailureSpan: 0, openFor: "1 second" }
        }).pipe(
          Layer.provide(Layer.succeed(QuotaStore.QuotaStore, silent)),
          Layer.provide(QuotaConfig.layer({ default: twoTier }))
        )
        yield* Effect.gen(function* () {
          const quota = yield* Quota.Quota
          const fiber = yield* Effect.forkChild(quota.check("c"))
          // the deadline fires a third of it early, 5 ms at most (so the decision is made by the
          // deadline), never before
          yield* TestClock.adjust(Duration.millis(9.9))
          expect(fiber.pollUnsafe()).toBeUndefined()
          yield* TestClock.adjust(Duration.millis(0.1))
          const first = yield* Fiber.join(fiber)
          expect(first).toMatchObject({ allowed: true, source: "fail-open" })
          for (let i = 0; i < 2; i++) {
            const f = yield* Effect.forkChild(quota.check("c"))
            yield* TestClock.adjust(Duration.millis(15))
            expect((yield* Fiber.join(f)).source).toBe("fail-open")
          }
          expect(calls).toBe(3)
          expect(yield* quota.breaker!.state).toBe("open")
          // open: answered at once, without calling the store
          for (let i = 0; i < 10; i++) expect((yield* quota.check("c")).source).toBe("fail-open")
          expect(calls).toBe(3)
          // after the probe interval one probe goes through
          yield* TestClock.adjust(Duration.seconds(1))
          const probe = yield* Effect.forkChild(quota.check("c"))
          yield* TestClock.adjust(Duration.millis(15))
          expect((yield* Fiber.join(probe)).source).toBe("fail-open")
          expect(calls).toBe(4)
        }).pipe(Effect.provide(layer))
      })
  )

  it.effect("counts decisions by source: the store's, and each failure mode's", () =>
    Effect.gen(function* () {
      // every call fails at once, like a Redis that refuses connections
      const refusing: QuotaStore.Store = {
        name: "refusing",
        remote: true,
        check: () => Effect.never,
        checkCallback: (_client, _plan, _cost, callback) =>
          callback(
            new QuotaStore.QuotaStoreError({ store: "refusing", reason: "unavailable", message: "refused" }),
            undefined
          ),
        adjust: () => Effect.void,
        block: () => Effect.void,
        reset: () => Effect.void
      }
      const counted = (name: string, source: string) =>
        Effect.map(Metric.snapshot, (snapshots) => {
          const byTier: Record<string, number> = {}
          for (const m of snapshots)
            if (m.id === name && m.attributes?.["source"] === source && m.type === "Counter")
              byTier[String(m.attributes["tier"] ?? "")] = Number(m.state.count)
          return byTier
        })
      const run = (mode: Quota.FailureMode | "memory") =>
        Effect.gen(function* () {
          const layer =
            mode === "memory"
              ? quotaLayer(twoTier)
              : Quota.layer({ mode }).pipe(
                  Layer.provide(Layer.succeed(QuotaStore.QuotaStore, refusing)),
                  Layer.provide(QuotaConfig.layer({ default: twoTier }))
                )
          const decisions = yield* Effect.flatMap(Quota.Quota, (quota) =>
            Effect.forEach(Array.from({ length: 12 }), () => quota.check("c"))
          ).pipe(Effect.provide(layer))
          const source = mode === "memory" ? "store" : mode
          expect(decisions.every((d) => d.source === source)).toBe(true)
          const deniedByTier: Record<string, number> = {}
          for (const d of decisions)
            for (const tier of d.tiers)
              if (!tier.allowed) deniedByTier[tier.tier] = (deniedByTier[tier.tier] ?? 0) + 1
          expect(yield* counted("sluice_quota_allowed_total", source)).toEqual(
            decisions.some((d) => d.allowed) ? { "": decisions.filter((d) => d.allowed).length } : {}
          )
          expect(yield* counted("sluice_quota_denied_total", source)).toEqual(deniedByTier)
          return decisions
        }).pipe(Effect.provideService(Metric.MetricRegistry, new Map()))
      // the memory store: 5 of the spike tier's burst, then denials by the spike tier
      const memory = yield* run("memory")
      expect(memory.filter((d) => d.allowed).length).toBe(5)
      expect((yield* run("fail-open")).every((d) => d.allowed)).toBe(true)
      expect((yield* run("fail-closed")).some((d) => d.allowed)).toBe(false)
      // the fallback: a local quota on the same plan (a share of it): some allowed, then denied
      const fallback = yield* run("fallback")
      expect(fallback.some((d) => d.allowed) && fallback.some((d) => !d.allowed)).toBe(true)
    })
  )

  it.effect("rejects bad options and bad costs", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(QuotaStore.makeMemory({ maxClients: 0 }))
      expect(Exit.isFailure(exit) && String(exit.cause)).toMatch(/maxClients/)
      const quota = yield* Effect.exit(Quota.make({ deadline: -1 }).pipe(Effect.provide(quotaLayer(twoTier))))
      expect(Exit.isFailure(quota) && String(quota.cause)).toMatch(/deadline/)
      const mode = yield* Effect.exit(
        Quota.make({ mode: "maybe" as any }).pipe(Effect.provide(quotaLayer(twoTier)))
      )
      expect(Exit.isFailure(mode) && String(mode.cause)).toMatch(/mode/)
      const cost = yield* Effect.exit(
        Quota.check("x", { cost: 0.5 }).pipe(Effect.provide(quotaLayer(twoTier)))
      )
      expect(Exit.isFailure(cost) && String(cost.cause)).toMatch(/cost/)
    }).pipe(Effect.scoped)
  )

  it.effect("refuses null for every option, naming it, as it refuses any other bad value", () =>
    Effect.gen(function* () {
      const fields = [
        "mode",
        "deadline",
        "maxDeadline",
        "breaker",
        "failClosedRetryAfter",
        "fallbackShare",
        "fallbackMaxClients",
        "maxClientIdLength"
      ]
      const breakerFields = [
        "failureRatio",
        "window",
        "minimumCalls",
        "consecutiveFailures",
        "minFailureSpan",
        "openFor",
        "halfOpenProbes"
      ]
      const cases = [
        ...fields.map((field) => [field, { [field]: null }] as const),
        ...breakerFields.map((field) => [`breaker.${field}`, { breaker: { [field]: null } }] as const)
      ]
      for (const [field, options] of cases) {
        const exit = yield* Effect.exit(
          Quota.make(options as unknown as Quota.QuotaOptions).pipe(Effect.provide(quotaLayer(twoTier)))
        )
        expect(failureOf(exit), field).toBeInstanceOf(Options.InvalidOptions)
        expect(String((failureOf(exit) as Options.InvalidOptions).message), field).toContain(`${field}:`)
      }
    }).pipe(Effect.scoped)
  )
})

import { Errors, Options } from "@sluice/core"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import * as IoRedis from "@sluice/quota/IoRedis"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import { describe, expect, it } from "@effect/vitest"
import { type Cause, Config, ConfigProvider, Duration, Effect, Exit, Layer, Logger } from "effect"
import fc from "fast-check"
import { Redis as IORedis } from "ioredis"
import { decodeState, tierId } from "@sluice/kernel/quota/RedisScript"
import { freePort } from "./quota/redisServer.js"
import { Reference } from "./quota/reference.js"
import { transports } from "./quota/transports.js"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"

const unique = (name: string) => `test:${name}:${process.pid}:${Math.random().toString(36).slice(2)}`

const decodePlan = (plan: QuotaConfig.PlanInput) =>
  Effect.orDie(Options.decode("test", QuotaConfig.Plan)(plan as typeof QuotaConfig.Plan.Encoded)).pipe(
    Effect.map(QuotaConfig.compile)
  )

/** `Fail`, `Die` or `Interrupt` for a cause of one reason (3.x's `cause._tag`), else how many it has. */
const causeTag = (cause: Cause.Cause<unknown>): string =>
  cause.reasons.length === 1 ? cause.reasons[0]!._tag : `${cause.reasons.length} reasons`

/** The error of a cause that is one typed failure (3.x's `cause._tag === "Fail" && cause.error`). */
const failureOf = <E>(cause: Cause.Cause<E>): E | false => {
  const reason = cause.reasons.length === 1 ? cause.reasons[0]! : undefined
  return reason !== undefined && reason._tag === "Fail" && reason.error
}

const withConfigProvider =
  (provider: ConfigProvider.ConfigProvider) =>
  <A, E, R>(self: Effect.Effect<A, E, R>) =>
    Effect.provideService(self, ConfigProvider.ConfigProvider, provider)

const withAdmin = <A>(f: (redis: IORedis) => Promise<A>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => new IORedis(REDIS_URL)),
    (redis) => Effect.promise(() => f(redis)),
    (redis) => Effect.promise(() => redis.quit())
  )

describe.each(transports)("Redis quota store (real Redis, $name)", (transport) => {
  it.live("GCRA and sliding-window decisions match a brute-force reference under the real clock", () =>
    Effect.gen(function* () {
      const store = yield* transport.makeStore(unique("ref") + ":")
      // gcra: 25 ms per unit, bucket 6; sliding window: 10 per 300 ms (integer µs everywhere)
      const plan = yield* decodePlan({
        tiers: [
          { name: "spike", algorithm: "gcra", limit: 4, period: 100, burst: 6 },
          { name: "count", algorithm: "sliding-window", limit: 10, period: 300 }
        ]
      })
      const reference = new Reference([
        { name: "spike", algorithm: "gcra", capacity: 6, unit: 25_000 },
        { name: "count", algorithm: "sliding-window", capacity: 10, unit: 300_000 }
      ])
      const steps = fc.sample(
        fc.record({ sleep: fc.integer({ min: 0, max: 18 }), cost: fc.integer({ min: 1, max: 2 }) }),
        { numRuns: 90, seed: 11 }
      )
      let denied = 0
      for (const step of steps) {
        if (step.sleep > 0) yield* Effect.sleep(Duration.millis(step.sleep))
        const result = yield* store.check("c", plan, step.cost)
        const now = Math.round(result.now * 1000)
        const expected = reference.check(now, step.cost)
        expect(result.allowed).toBe(expected.allowed)
        expect(result.tiers.map((t) => [t.allowed, t.remaining])).toEqual(
          expected.tiers.map((t) => [t.allowed, t.remaining])
        )
        if (!result.allowed) {
          denied++
          const retry = Math.max(...result.tiers.map((t) => t.retryAfterMs))
          expect(reference.peek(now + retry * 1000, step.cost).allowed).toBe(true)
          expect(reference.peek(now + (retry - 1) * 1000, step.cost).allowed).toBe(false)
        }
      }
      // the sequence exercises both outcomes
      expect(denied).toBeGreaterThan(5)
      expect(denied).toBeLessThan(steps.length - 5)
    }).pipe(Effect.scoped)
  )

  it.live("one key per client under its hash tag, with a TTL; a denied request writes nothing", () =>
    Effect.gen(function* () {
      const prefix = unique("keys") + ":"
      const store = yield* transport.makeStore(prefix)
      const plan = yield* decodePlan({
        tiers: [
          { name: "spike", algorithm: "gcra", limit: 20, period: "1 minute", burst: 40 },
          { name: "count", algorithm: "sliding-window", limit: 5000, period: "1 hour" },
          { name: "minute", algorithm: "sliding-window", limit: 100, period: "1 minute" }
        ]
      })
      const times: Array<number> = []
      for (const client of ["alpha", "beta:1", "gamma/x"]) {
        for (let i = 0; i < 3; i++) {
          const result = yield* store.check(client, plan, 1)
          expect(result.allowed).toBe(true)
          if (client === "alpha") times.push(result.now)
        }
      }
      const keys = yield* withAdmin((redis) => redis.keys(`${prefix}*`))
      // one key per client holds every tier
      expect(keys.sort()).toEqual([`${prefix}{alpha}`, `${prefix}{beta:1}`, `${prefix}{gamma/x}`])
      for (const key of keys) {
        expect(key).toMatch(/^[^{}]*\{(alpha|beta:1|gamma\/x)\}$/)
        const ttl = yield* withAdmin((redis) => redis.pttl(key))
        expect(ttl).toBeGreaterThan(0)
        // past the instant every tier is full again (the hour counter's window and the next
        // one), with a slack of half as long again
        expect(ttl).toBeLessThanOrEqual(1.5 * 2 * 3_600_000 + 1)
      }
      // a string of doubles: expiry, block, then per tier its id and numbers
      const [value, ttl] = yield* withAdmin((redis) =>
        Promise.all([redis.getBuffer(`${prefix}{alpha}`), redis.pttl(`${prefix}{alpha}`)])
      )
      expect(value!.length).toBe(8 * (2 + 3 + 2 + 3 + 3))
      const state = decodeState(value!)
      expect(state.blockedUntil).toBe(0)
      // the expiry kept in the value is the key's TTL
      expect(Math.abs(state.expiresAt - (Date.now() + ttl))).toBeLessThan(1000)
      const [spike, count, minute] = plan.tiers.map((tier) => state.tiers.get(tierId(tier))!)
      const last = times[2]!
      // sliding windows: the window number, 3 in it (none before: a new client)
      expect(count).toEqual([Math.floor(last / 3_600_000), 3, 0])
      expect(minute![0]).toBe(Math.floor(last / 60_000))
      expect(minute![1]).toBe(3)
      // gcra (20 a minute: 3,000 ms a unit): the theoretical arrival time, 3 units past the first
      // check (as whole ms and a remainder in 1/20 ms), at most 3 units past the last
      expect(spike![0] + spike![1]! / 20).toBeGreaterThanOrEqual(times[0]! + 3000)
      expect(spike![0] + spike![1]! / 20).toBeLessThanOrEqual(last + 9000)
      // a denied request writes nothing
      const strict = yield* decodePlan({
        tiers: [{ name: "n", algorithm: "sliding-window", limit: 1, period: "1 hour" }]
      })
      expect((yield* store.check("delta", strict, 1)).allowed).toBe(true)
      const before = yield* withAdmin((redis) =>
        Promise.all([redis.getBuffer(`${prefix}{delta}`), redis.pttl(`${prefix}{delta}`)])
      )
      expect((yield* store.check("delta", strict, 1)).allowed).toBe(false)
      const after = yield* withAdmin((redis) =>
        Promise.all([redis.getBuffer(`${prefix}{delta}`), redis.pttl(`${prefix}{delta}`)])
      )
      expect(after[0]!.equals(before[0]!)).toBe(true)
      expect(after[1]).toBeLessThanOrEqual(before[1])
    }).pipe(Effect.scoped)
  )

  it.live(
    "a key of another type (0.1 kept a hash) or a string that is no state is read as a new client and replaced",
    () =>
      Effect.gen(function* () {
        const prefix = unique("old") + ":"
        const store = yield* transport.makeStore(prefix)
        const plan = yield* decodePlan({
          tiers: [{ name: "count", algorithm: "sliding-window", limit: 2, period: "1 hour" }]
        })
        const key = `${prefix}{old}`
        yield* withAdmin((redis) => redis.hset(key, "count|c", "2", "count|w", "0"))
        const first = yield* store.check("old", plan, 1)
        expect(first.allowed).toBe(true)
        expect(first.tiers[0]!.remaining).toBe(1)
        expect(yield* withAdmin((redis) => redis.type(key))).toBe("string")
        expect((yield* store.check("old", plan, 1)).allowed).toBe(true)
        expect((yield* store.check("old", plan, 1)).allowed).toBe(false)
        // a string that is not a state (NaN where an id would be, a ragged length, text) likewise
        const nans = Buffer.alloc(48)
        for (let at = 0; at < 48; at += 8) nans.writeDoubleLE(NaN, at)
        for (const junk of [nans, Buffer.from("not a quota state"), Buffer.alloc(8 * 5000)]) {
          yield* withAdmin((redis) => redis.set(key, junk))
          expect((yield* store.check("old", plan, 1)).tiers[0]!.remaining).toBe(1)
          yield* store.adjust("old", plan, 1)
          expect((yield* store.check("old", plan, 0)).tiers[0]!.remaining).toBe(0)
          expect(yield* withAdmin((redis) => redis.pttl(key))).toBeGreaterThan(0)
        }
      }).pipe(Effect.scoped)
  )

  it.live("Quota over Redis: guard, denial consumes nothing, cost", () =>
    Effect.gen(function* () {
      // a generous deadline: these tests are about decisions, not about the failure mode
      const layer = Quota.layer({ deadline: "2 seconds" }).pipe(
        Layer.provide(transport.layerStore(unique("guard") + ":")),
        Layer.provide(
          QuotaConfig.layer({
            default: {
              tiers: [
                { name: "spike", algorithm: "gcra", limit: 5, period: "1 minute", burst: 5 },
                { name: "count", algorithm: "sliding-window", limit: 9, period: "1 hour" }
              ]
            }
          })
        )
      )
      yield* Effect.gen(function* () {
        expect((yield* Quota.check("c", { cost: 4 })).allowed).toBe(true)
        // 4 more would exceed the spike bucket: denied, and "count" is left untouched
        const denied = yield* Quota.check("c", { cost: 4 })
        expect(denied).toMatchObject({ allowed: false, source: "store" })
        expect(denied.deniedBy?.tier).toBe("spike")
        expect(denied.tiers[1]).toMatchObject({ tier: "count", allowed: true, remaining: 5 })
        expect(denied.retryAfterMs).toBeGreaterThan(35_000)
        const exit = yield* Effect.exit(Effect.void.pipe(Quota.guard("c", { cost: 2 })))
        expect(Exit.isFailure(exit) && failureOf(exit.cause)).toBeInstanceOf(Errors.QuotaExceeded)
        expect((yield* Quota.check("c", { cost: 1 })).tiers.map((t) => t.remaining)).toEqual([0, 4])
      }).pipe(Effect.provide(layer))
    })
  )

  it.live("plans in a Redis hash: shared, validated, refreshed; an invalid plan keeps the previous one", () =>
    Effect.gen(function* () {
      const key = unique("plans")
      const logs: Array<string> = []
      const logger = Logger.layer([Logger.make(({ message }) => logs.push(String(message)))])
      const defaultPlan: QuotaConfig.PlanInput = {
        tiers: [{ name: "spike", algorithm: "gcra", limit: 10, period: "1 second" }]
      }
      const a = yield* transport.makeConfig({ key, default: defaultPlan, refresh: "1 hour" })
      const b = yield* transport.makeConfig({ key, default: defaultPlan, refresh: "1 hour" })
      yield* a.setPlan("acme", {
        tiers: [{ name: "count", algorithm: "sliding-window", limit: 5000, period: "1 hour" }]
      })
      // takes effect here at once, elsewhere after a refresh
      expect(a.planFor("acme").tiers[0]!.name).toBe("count")
      expect(b.planFor("acme").tiers[0]!.name).toBe("spike")
      yield* b.refresh
      expect(b.planFor("acme").tiers[0]).toMatchObject({ name: "count", limit: 5000, periodMs: 3_600_000 })

      // an invalid plan through the API is rejected before it is written
      const bad = yield* Effect.exit(
        a.setPlan("acme", { tiers: [{ name: "count", algorithm: "sliding-window", limit: 0, period: 1 }] })
      )
      expect(Exit.isFailure(bad) && String(bad.cause)).toMatch(/limit/)
      expect(JSON.parse((yield* withAdmin((r) => r.hget(key, "acme")))!).tiers[0].limit).toBe(5000)

      // an invalid plan written behind our back is logged (naming the field) and ignored
      yield* withAdmin((r) =>
        r.hset(
          key,
          "acme",
          JSON.stringify({ tiers: [{ name: "count", algorithm: "gcra", limit: 3, period: -5 }] })
        )
      )
      yield* b.refresh.pipe(Effect.provide(logger))
      expect(b.planFor("acme").tiers[0]).toMatchObject({ name: "count", limit: 5000 })
      expect(logs.join("\n")).toMatch(/period/)

      // removing the override falls back to the default everywhere
      yield* a.removePlan("acme")
      yield* b.refresh
      expect(b.planFor("acme").tiers[0]!.name).toBe("spike")
      yield* withAdmin((r) => r.del(key))
    }).pipe(Effect.scoped)
  )

  it.live("plans in Redis: the default set on one instance is the default of every instance", () =>
    Effect.gen(function* () {
      const key = unique("plans-default")
      const configured: QuotaConfig.PlanInput = {
        tiers: [{ name: "spike", algorithm: "gcra", limit: 10, period: "1 second" }]
      }
      const shared: QuotaConfig.PlanInput = {
        tiers: [{ name: "count", algorithm: "sliding-window", limit: 7, period: "1 minute" }],
        blockFor: "2 seconds"
      }
      const a = yield* transport.makeConfig({ key, default: configured, refresh: "1 hour" })
      const b = yield* transport.makeConfig({ key, default: configured, refresh: "1 hour" })
      yield* a.setDefault(shared)
      // at once here, after a refresh there
      expect(a.planFor("anyone").tiers[0]).toMatchObject({ name: "count", limit: 7 })
      yield* b.refresh
      expect(b.planFor("anyone").tiers[0]).toMatchObject({ name: "count", limit: 7, periodMs: 60_000 })
      expect((yield* b.defaultPlan).blockFor).toEqual(Duration.seconds(2))
      // an instance started later begins with it
      const c = yield* transport.makeConfig({ key, default: configured, refresh: "1 hour" })
      expect(c.planFor("anyone").tiers[0]).toMatchObject({ name: "count", limit: 7 })
      // an override still wins over the shared default
      yield* a.setPlan("acme", configured)
      yield* c.refresh
      expect(c.planFor("acme").tiers[0]!.name).toBe("spike")
      // deleted from Redis: every instance goes back to the default it was configured with
      yield* withAdmin((r) => r.del(`${key}:default`))
      yield* b.refresh
      expect(b.planFor("anyone").tiers[0]!.name).toBe("spike")
      yield* withAdmin((r) => r.del(key))
    }).pipe(Effect.scoped)
  )

  it.live("100 concurrent checks from one process: each client admits exactly its limit", () =>
    Effect.gen(function* () {
      // a generous deadline: these tests are about decisions, not about the failure mode
      const layer = Quota.layer({ deadline: "2 seconds" }).pipe(
        Layer.provide(transport.layerStore(unique("conc") + ":")),
        Layer.provide(
          QuotaConfig.layer({
            default: { tiers: [{ name: "n", algorithm: "sliding-window", limit: 50, period: "1 hour" }] }
          })
        )
      )
      const decisions = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) => Quota.check(`c${i % 3}`),
        { concurrency: 100 }
      ).pipe(Effect.provide(layer))
      expect(decisions.every((d) => d.source === "store")).toBe(true)
      // 67, 67 and 66 attempts: 50 admitted each
      for (const client of ["c0", "c1", "c2"]) {
        expect(decisions.filter((d) => d.client === client && d.allowed).length).toBe(50)
      }
    })
  )
})

describe("Redis quota store (real Redis, ioredis connections)", () => {
  it.live(
    "layerStoreConfig: the store's url and prefix from Config; a missing value fails with ConfigError",
    () =>
      Effect.gen(function* () {
        const prefix = unique("config") + ":"
        const config = Config.all({ url: Config.String("REDIS_URL"), prefix: Config.String("QUOTA_PREFIX") })
        const env = ConfigProvider.fromEnv({ env: { REDIS_URL, QUOTA_PREFIX: prefix } })
        const plan = yield* decodePlan({
          tiers: [{ name: "t", algorithm: "gcra", limit: 2, period: "1 minute" }]
        })
        const remaining = yield* Effect.gen(function* () {
          const store = yield* QuotaStore.QuotaStore
          const first = yield* store.check("cfg", plan, 1)
          const second = yield* store.check("cfg", plan, 1)
          return [first.tiers[0]!.remaining, second.tiers[0]!.remaining]
        }).pipe(Effect.provide(IoRedis.layerStoreConfig(config)), withConfigProvider(env))
        expect(remaining).toEqual([1, 0])
        expect(yield* withAdmin((redis) => redis.keys(`${prefix}*`))).toEqual([`${prefix}{cfg}`])
        const missing = yield* Effect.exit(
          Layer.build(IoRedis.layerStoreConfig(config)).pipe(
            Effect.scoped,
            withConfigProvider(ConfigProvider.fromEnv({ env: {} }))
          )
        )
        expect(Exit.isFailure(missing) && failureOf(missing.cause) instanceof Config.ConfigError).toBe(true)
      })
  )

  it.live(
    "a store that cannot be reached: fail-open allows, fail-closed denies, fallback decides locally",
    () =>
      Effect.gen(function* () {
        const port = yield* Effect.promise(() => freePort())
        const plan: QuotaConfig.PlanInput = {
          tiers: [{ name: "n", algorithm: "sliding-window", limit: 2, period: "1 minute" }]
        }
        const run = (mode: Quota.FailureMode) =>
          Effect.gen(function* () {
            const decisions: Array<Quota.Decision> = []
            for (let i = 0; i < 3; i++) decisions.push(yield* Quota.check("c"))
            return decisions
          }).pipe(
            Effect.provide(
              Quota.layer({ mode }).pipe(
                Layer.provide(
                  IoRedis.layerStore({
                    url: `redis://127.0.0.1:${port}`,
                    redisOptions: { connectTimeout: 200 }
                  })
                ),
                Layer.provide(QuotaConfig.layer({ default: plan }))
              )
            )
          )
        const open = yield* run("fail-open")
        expect(open.map((d) => [d.allowed, d.source])).toEqual([
          [true, "fail-open"],
          [true, "fail-open"],
          [true, "fail-open"]
        ])
        const closed = yield* run("fail-closed")
        expect(closed.map((d) => [d.allowed, d.source])).toEqual([
          [false, "fail-closed"],
          [false, "fail-closed"],
          [false, "fail-closed"]
        ])
        expect(closed[0]!.retryAfterMs).toBeGreaterThan(0)
        const fallback = yield* run("fallback")
        expect(fallback.map((d) => [d.allowed, d.source])).toEqual([
          [true, "fallback"],
          [true, "fallback"],
          [false, "fallback"]
        ])
      })
  )

  it.live("plans in Redis: writes to an unreachable Redis fail typed, and the plans in force stay", () =>
    Effect.gen(function* () {
      const defaultPlan: QuotaConfig.PlanInput = {
        tiers: [{ name: "spike", algorithm: "gcra", limit: 10, period: "1 second" }]
      }
      const other: QuotaConfig.PlanInput = {
        tiers: [{ name: "count", algorithm: "sliding-window", limit: 5000, period: "1 hour" }]
      }
      // a port nothing listens on
      const port = yield* Effect.promise(() => freePort())
      const down = yield* IoRedis.makeConfig({
        url: `redis://127.0.0.1:${port}`,
        key: unique("plans-down"),
        default: defaultPlan,
        refresh: "1 hour"
      })
      for (const write of [down.setPlan("acme", other), down.removePlan("acme"), down.setDefault(other)]) {
        const exit = yield* Effect.exit(write)
        // a failure, not a defect
        expect(Exit.isFailure(exit) && causeTag(exit.cause)).toBe("Fail")
        const error = yield* Effect.flip(write)
        expect(error).toBeInstanceOf(QuotaStore.QuotaStoreError)
        expect(error).toMatchObject({ _tag: "QuotaStoreError", store: "redis", reason: "unavailable" })
      }
      // nothing took effect here either: a write is stored before it is applied
      expect(down.planFor("acme").tiers[0]!.name).toBe("spike")
      expect((yield* down.defaultPlan).tiers[0]!.name).toBe("spike")

      // a client already quit
      const quit = new IORedis(REDIS_URL)
      yield* Effect.promise(() => quit.quit())
      const closed = yield* Effect.provideService(
        IoRedis.makeConfigShared({ key: unique("plans-quit"), default: defaultPlan, refresh: "1 hour" }),
        IoRedisClient.IoRedisClient,
        { client: quit }
      )
      for (const write of [
        closed.setPlan("acme", other),
        closed.removePlan("acme"),
        closed.setDefault(other)
      ])
        expect(yield* Effect.flip(write)).toMatchObject({ _tag: "QuotaStoreError", reason: "unavailable" })
    }).pipe(Effect.scoped)
  )
})

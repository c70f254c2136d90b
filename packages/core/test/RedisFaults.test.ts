import { Quota, QuotaConfig } from "@sluice/core"
import * as Redis from "@sluice/core/Redis"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { commandCalls, type RedisServer, redisCli, startRedis, stopAll } from "./quota/redisServer.js"

const plan: QuotaConfig.PlanInput = {
  tiers: [
    { name: "spike", algorithm: "gcra", limit: 1000, period: "1 second", burst: 1000 },
    { name: "count", algorithm: "sliding-window", limit: 100_000, period: "1 hour" }
  ]
}

const DEADLINE_MS = 15
const OPEN_FOR_MS = 500

// This machine is shared: when the OS does not schedule the process, no timer can fire on time.
// The event-loop delay (how late a 1 ms timer fires, measured alongside) is what the process lost
// to the scheduler. A check can lose it twice (when its deadline fires, and when its fiber
// resumes), so twice the worst delay is added to the allowance; both figures are printed. On an
// idle machine the delay is ~0 and this is the plain "deadline + 2 ms".
const loopDelay = monitorEventLoopDelay({ resolution: 1 })
loopDelay.enable()
const withinDeadline = (slowest: number, phase: string) => {
  const lost = loopDelay.max / 1e6
  loopDelay.reset()
  console.log(`${phase}: slowest check ${slowest.toFixed(2)} ms, event-loop delay max ${lost.toFixed(2)} ms`)
  expect(slowest).toBeLessThanOrEqual(DEADLINE_MS + 2 + 2 * lost)
}

describe("Redis quota store against a private redis-server", () => {
  let server: RedisServer
  beforeAll(async () => {
    server = await startRedis()
  })
  afterAll(() => stopAll())

  const quotaLayer = (options: Quota.QuotaOptions) =>
    Quota.layer(options).pipe(
      Layer.provide(Redis.layerRedis({ url: server.url })),
      Layer.provide(QuotaConfig.layer({ default: plan }))
    )

  // INFO commandstats also counts the commands a script runs; those never cross the network
  const scriptCommands = /^(time|hmget|hset|pexpire)$/
  const roundTrips = (calls: Record<string, number>) =>
    Object.entries(calls)
      .filter(([name]) => !scriptCommands.test(name) && !/^(info|config\|resetstat)$/.test(name))
      .reduce((sum, [, n]) => sum + n, 0)

  it.live("a two-tier check is ONE round trip (INFO commandstats); NOSCRIPT reloads with EVAL", () =>
    Effect.gen(function* () {
      const quota = yield* Quota.Quota
      yield* quota.check("warm-up")
      yield* Effect.promise(() => redisCli(server.port, "CONFIG", "RESETSTAT"))
      for (let i = 0; i < 200; i++) expect((yield* quota.check(`c${i % 7}`)).source).toBe("store")
      const calls = yield* Effect.promise(() => commandCalls(server.port))
      expect(calls["evalsha"]).toBe(200)
      expect(roundTrips(calls)).toBe(200)
      // one script run per check, each reading the server clock once
      expect(calls["time"]).toBe(200)

      yield* Effect.promise(() => redisCli(server.port, "SCRIPT", "FLUSH"))
      yield* Effect.promise(() => redisCli(server.port, "CONFIG", "RESETSTAT"))
      for (let i = 0; i < 10; i++) expect((yield* quota.check("after-flush")).source).toBe("store")
      const after = yield* Effect.promise(() => commandCalls(server.port))
      expect(after["evalsha"]).toBe(10)
      expect(after["eval"]).toBe(1)
      expect(roundTrips(after)).toBe(11)
    }).pipe(Effect.provide(quotaLayer({ deadline: "2 seconds" })))
  )

  it.live(
    "paused, killed, restarted: fail-open within deadline + 2 ms, the breaker stops calling Redis and recovers within a probe interval",
    () =>
      Effect.gen(function* () {
        const quota = yield* Quota.Quota
        const breaker = quota.breaker!
        let slowest = 0
        const timed = Effect.suspend(() => {
          const start = performance.now()
          return Effect.map(quota.check("fault"), (decision) => {
            slowest = Math.max(slowest, performance.now() - start)
            return decision
          })
        })
        for (let i = 0; i < 30; i++) yield* timed
        slowest = 0
        loopDelay.reset()

        // 1. paused: every check answers within the deadline; after a few misses the breaker opens
        const before = yield* Effect.promise(() => commandCalls(server.port))
        yield* Effect.promise(() => redisCli(server.port, "CLIENT", "PAUSE", "1300", "ALL"))
        const pausedAt = performance.now()
        let paused = 0
        const states = new Set<string>()
        while (performance.now() - pausedAt < 1100) {
          const decision = yield* timed
          expect(decision.allowed).toBe(true)
          paused++
          states.add(yield* breaker.state)
          yield* Effect.sleep(Duration.millis(2))
        }
        withinDeadline(slowest, "paused")
        expect(states.has("open")).toBe(true)
        // wait for the pause to end; everything Redis received meanwhile is now counted
        yield* Effect.sleep(Duration.millis(Math.max(0, 1450 - (performance.now() - pausedAt))))
        const after = yield* Effect.promise(() => commandCalls(server.port))
        const sent = (after["evalsha"] ?? 0) - (before["evalsha"] ?? 0)
        expect(paused).toBeGreaterThan(100)
        // 3 misses open the breaker, then one probe per 500 ms
        expect(sent).toBeLessThanOrEqual(8)

        // 2. killed: still within the deadline, still allowed
        yield* Effect.promise(() => server.kill())
        slowest = 0
        loopDelay.reset()
        const killedAt = performance.now()
        while (performance.now() - killedAt < 700) {
          const decision = yield* timed
          expect(decision).toMatchObject({ allowed: true, source: "fail-open" })
          yield* Effect.sleep(Duration.millis(2))
        }
        withinDeadline(slowest, "killed")

        // 3. restarted: the breaker probes and the store answers again within one probe interval
        yield* Effect.promise(() => server.restart())
        const backAt = performance.now()
        slowest = 0
        loopDelay.reset()
        let recovered = -1
        while (performance.now() - backAt < 3000) {
          const decision = yield* timed
          if (decision.source === "store") {
            recovered = performance.now() - backAt
            break
          }
          yield* Effect.sleep(Duration.millis(2))
        }
        expect(recovered).toBeGreaterThanOrEqual(0)
        // one probe interval, plus at most one reconnection attempt of the client (100 ms)
        expect(recovered).toBeLessThanOrEqual(OPEN_FOR_MS + 150)
        withinDeadline(slowest, "restarted")
        // back to normal (a rare miss of the 15 ms deadline on this busy machine is tolerated)
        let fromStore = 0
        for (let i = 0; i < 20; i++) if ((yield* timed).source === "store") fromStore++
        expect(fromStore).toBeGreaterThanOrEqual(17)
        expect(yield* breaker.state).toBe("closed")
      }).pipe(
        Effect.provide(
          quotaLayer({
            mode: "fail-open",
            deadline: `${DEADLINE_MS} millis`,
            breaker: { consecutiveFailures: 3, openFor: `${OPEN_FOR_MS} millis` }
          })
        )
      )
  )
})

import { NodeRedis } from "@effect/platform-node"
import { Quota, QuotaConfig } from "@sluice/quota"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import * as Redis from "@sluice/quota/Redis"
import * as IoRedis from "@sluice/quota/IoRedis"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import * as net from "node:net"
import {
  commandCalls,
  freePort,
  type RedisServer,
  redisCli,
  roundTrips,
  startRedis,
  stopAll
} from "./quota/redisServer.js"

const plan: QuotaConfig.PlanInput = {
  tiers: [
    { name: "spike", algorithm: "gcra", limit: 1000, period: "1 second", burst: 1000 },
    { name: "count", algorithm: "sliding-window", limit: 100_000, period: "1 hour" }
  ]
}

// the library's default deadline, a hard bound: these tests pass no `deadline`
const DEADLINE_MS = 15
const OPEN_FOR_MS = 500

// This machine is shared: when the OS does not schedule the process, no timer can fire on time.
// The event-loop delay (how late a 1 ms timer fires, measured alongside) is what the process lost
// to the scheduler, and what the bound allows beyond the deadline and 2 ms (the deadline timer
// wakes 5 ms early, which covers a second, shorter loss while the decision is made); both figures
// are printed. On an idle machine the delay is ~0 and this is the plain "deadline + 2 ms".
const loopDelay = monitorEventLoopDelay({ resolution: 1 })
loopDelay.enable()
const withinDeadline = (slowest: number, phase: string) => {
  const lost = loopDelay.max / 1e6
  loopDelay.reset()
  console.log(`${phase}: slowest check ${slowest.toFixed(2)} ms, event-loop delay max ${lost.toFixed(2)} ms`)
  expect(slowest).toBeLessThanOrEqual(DEADLINE_MS + 2 + lost)
}

/**
 * A TCP proxy to `port` that forwards nothing, either way, while `blackholed` (a network that
 * drops every packet: nothing is refused or closed, TCP delivers the bytes once it heals).
 */
const blackholeProxy = async (port: number) => {
  const sockets = new Set<net.Socket>()
  let on = false
  const server = net.createServer((inbound) => {
    const outbound = net.connect(port, "127.0.0.1")
    for (const socket of [inbound, outbound]) {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
      socket.on("error", () => {
        inbound.destroy()
        outbound.destroy()
      })
      if (on) socket.pause()
    }
    inbound.on("data", (chunk) => outbound.write(chunk))
    outbound.on("data", (chunk) => inbound.write(chunk))
  })
  const proxyPort = await freePort()
  await new Promise<void>((resolve) => server.listen(proxyPort, "127.0.0.1", resolve))
  return {
    url: `redis://127.0.0.1:${proxyPort}`,
    blackholed: (value: boolean) => {
      on = value
      for (const socket of sockets) {
        if (value) socket.pause()
        else socket.resume()
      }
    },
    close: () => {
      for (const socket of sockets) socket.destroy()
      server.close()
    }
  }
}

// the store on each client: ioredis (the shared `IoRedisClient`) or Effect's `Redis` from NodeRedis
// (node-redis), both reconnecting every 100 ms (node-redis' default backs off to 2 s)
const transports = [
  {
    name: "ioredis",
    store: (url: string, prefix: string) =>
      IoRedis.layerStoreShared({ prefix }).pipe(Layer.provide(IoRedisClient.layer({ url })))
  },
  {
    name: "NodeRedis",
    store: (url: string, prefix: string) =>
      Redis.layerStore({ prefix }).pipe(
        Layer.provide(NodeRedis.layer({ url, socket: { reconnectStrategy: () => 100 } }))
      )
  }
]

describe.each(transports)("Redis quota store against a private redis-server ($name)", (transport) => {
  let server: RedisServer
  beforeAll(async () => {
    server = await startRedis()
  })
  afterAll(() => stopAll())

  const quotaLayer = (options: Quota.QuotaOptions, url = server.url) =>
    Quota.layer(options).pipe(
      Layer.provide(transport.store(url, `faults:${Math.random()}:`)),
      Layer.provide(QuotaConfig.layer({ default: plan }))
    )

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
    "paused, killed, restarted: fail-open within the default deadline + 2 ms, the breaker stops calling Redis and recovers within a probe interval",
    () =>
      Effect.gen(function* () {
        const quota = yield* Quota.Quota
        expect(Duration.toMillis(quota.maxDeadline)).toBe(DEADLINE_MS)
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
        // failures spread over 250 ms open the breaker (about 15 sequential checks of 15 ms),
        // then one probe per 500 ms
        expect(sent).toBeLessThanOrEqual(30)

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
            breaker: { openFor: `${OPEN_FOR_MS} millis` }
          })
        )
      )
  )

  /**
   * Checks from 16 fibers in a loop (so 16 are in flight at any time) while `stall` runs 5 times, 300 ms apart; returns what the
   * checks saw. The breaker must stay closed throughout.
   */
  let stalls = 0
  const underStalls = (stall: Effect.Effect<void>) =>
    Effect.gen(function* () {
      const quota = yield* Quota.Quota
      const breaker = quota.breaker!
      const states = new Set<string>()
      const sources: Record<string, number> = {}
      // the checks in flight when a stall began, by how they were decided
      const spanning: Record<string, number> = {}
      let running = true
      const loop = Effect.gen(function* () {
        while (running) {
          const before = stalls
          const decision = yield* quota.check(`stall-${Math.floor(Math.random() * 50)}`)
          sources[decision.source] = (sources[decision.source] ?? 0) + 1
          if (stalls !== before) spanning[decision.source] = (spanning[decision.source] ?? 0) + 1
          states.add(yield* breaker.state)
        }
      })
      const fibers = yield* Effect.forEach(
        Array.from({ length: 16 }, () => loop),
        (body) => Effect.forkChild(body)
      )
      yield* Effect.sleep(Duration.millis(200))
      for (let i = 0; i < 5; i++) {
        stalls++
        yield* stall
        yield* Effect.sleep(Duration.millis(300))
      }
      running = false
      yield* Fiber.awaitAll(fibers)
      return { states, sources, spanning }
    })

  // The stall tests use the default deadline, 15 ms, shorter than a 20 ms stall
  it.live("a 20 ms stall of Redis, five times, does not open the breaker (15 ms deadline)", () =>
    Effect.gen(function* () {
      const { sources, states } = yield* underStalls(
        Effect.promise(async () => {
          // SIGSTOP the server: it neither reads nor answers for 20 ms
          server.process.kill("SIGSTOP")
          await new Promise((resolve) => setTimeout(resolve, 20))
          server.process.kill("SIGCONT")
        })
      )
      console.log(
        `Redis stalls: decisions by source ${JSON.stringify(sources)}, breaker states ${[...states]}`
      )
      expect([...states]).toEqual(["closed"])
      expect(sources["store"]).toBeGreaterThan(100)
    }).pipe(Effect.provide(quotaLayer({})))
  )

  it.live(
    "a 20 ms stall of this process, five times, does not open the breaker; replies already received are used",
    () =>
      Effect.gen(function* () {
        const { sources, spanning, states } = yield* underStalls(
          Effect.sync(() => {
            // a synchronous 20 ms: no timer, no socket read, while Redis answers the checks in flight
            const end = performance.now() + 20
            while (performance.now() < end) {
              // busy
            }
          })
        )
        console.log(
          `process stalls: decisions by source ${JSON.stringify(sources)}, of the checks in flight when ` +
            `a stall began ${JSON.stringify(spanning)}, breaker states ${[...states]}`
        )
        expect([...states]).toEqual(["closed"])
        expect(sources["store"]).toBeGreaterThan(100)
        // the checks in flight when a stall began (16 per stall) outlived their 15 ms deadline, but
        // Redis answered them meanwhile: their replies are read before the deadlines expire
        // (without that, every one of them went to the fallback); on this shared machine a reply
        // still on its way may miss
        const spanned = (spanning["store"] ?? 0) + (spanning["fallback"] ?? 0)
        expect(spanned).toBeGreaterThanOrEqual(40)
        expect(spanning["fallback"] ?? 0).toBeLessThanOrEqual(spanned / 2)
      }).pipe(Effect.provide(quotaLayer({})))
  )

  it.live("paused: fail-closed and fallback give every check its mode within deadline + 2 ms", () =>
    Effect.gen(function* () {
      for (const mode of ["fail-closed", "fallback"] as const) {
        yield* Effect.gen(function* () {
          const quota = yield* Quota.Quota
          for (let i = 0; i < 10; i++) yield* quota.check("warm")
          loopDelay.reset()
          yield* Effect.promise(() => redisCli(server.port, "CLIENT", "PAUSE", "400", "ALL"))
          const pausedAt = performance.now()
          let slowest = 0
          const sources = new Set<string>()
          while (performance.now() - pausedAt < 300) {
            const start = performance.now()
            const decision = yield* quota.check("paused")
            slowest = Math.max(slowest, performance.now() - start)
            sources.add(decision.source)
            yield* Effect.sleep(Duration.millis(2))
          }
          withinDeadline(slowest, `paused, ${mode}`)
          expect([...sources]).toEqual([mode])
          yield* Effect.sleep(Duration.millis(200))
        }).pipe(Effect.provide(quotaLayer({ mode })))
      }
    })
  )

  it.live(
    "blackholed (nothing answers, nothing is refused): the default mode decides every check within deadline + 2 ms",
    () =>
      Effect.gen(function* () {
        const proxy = yield* Effect.acquireRelease(
          Effect.promise(() => blackholeProxy(server.port)),
          (p) => Effect.sync(() => p.close())
        )
        yield* Effect.gen(function* () {
          const quota = yield* Quota.Quota
          // a first check on a new connection may miss 15 ms on this busy machine: warm up until Redis decides
          let fromStore = 0
          for (let i = 0; i < 50 && fromStore < 10; i++) {
            if ((yield* quota.check("warm")).source === "store") fromStore++
            else yield* Effect.sleep(Duration.millis(20))
          }
          expect(fromStore).toBe(10)
          loopDelay.reset()
          proxy.blackholed(true)
          const from = performance.now()
          let slowest = 0
          const sources = new Set<string>()
          while (performance.now() - from < 700) {
            const start = performance.now()
            const decision = yield* quota.check("blackholed")
            slowest = Math.max(slowest, performance.now() - start)
            sources.add(decision.source)
            yield* Effect.sleep(Duration.millis(2))
          }
          withinDeadline(slowest, "blackholed, fallback")
          expect([...sources]).toEqual(["fallback"])
          proxy.blackholed(false)
        }).pipe(Effect.provide(quotaLayer({}, proxy.url)))
      }).pipe(Effect.scoped)
  )
})

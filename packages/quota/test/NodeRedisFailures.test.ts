// node-redis' failures, over Effect's `Redis` service, land in the reason the ioredis store gives
// the same event: the typed error's `reason` and `sluice_quota_store_failures_total{reason}` read
// alike on both clients. A real node-redis client (NodeRedis) against a private redis-server that
// the test kills or stops.
import { NodeRedis } from "@effect/platform-node"
import { Options } from "@sluice/core"
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import * as Redis from "@sluice/quota/Redis"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Metric } from "effect"
import * as PersistenceRedis from "effect/persistence/Redis"
import { ConnectionTimeoutError } from "redis"
import { type RedisServer, startRedis, stopAll } from "./quota/redisServer.js"
import { toStoreError } from "../src/internal/redisTransportStore.js"

const planInput: QuotaConfig.PlanInput = {
  tiers: [{ name: "count", algorithm: "sliding-window", limit: 100, period: "1 hour" }]
}
const decodePlan = Effect.orDie(
  Options.decode("test", QuotaConfig.Plan)(planInput as typeof QuotaConfig.Plan.Encoded)
).pipe(Effect.map(QuotaConfig.compile))

const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

/** The store on a NodeRedis client with these options; `fault` breaks Redis, then a check fails. */
const failedCheck = (
  server: RedisServer,
  options: Omit<NonNullable<Parameters<typeof NodeRedis.layer>[0]>, "url">,
  fault: Effect.Effect<void>
) =>
  Effect.gen(function* () {
    const store = yield* Redis.makeStore({ prefix: `failures:${Math.random()}:` })
    const plan = yield* decodePlan
    // a first check answers (and leaves the socket just active)
    expect((yield* store.check("c", plan, 1)).allowed).toBe(true)
    yield* fault
    return yield* Effect.flip(store.check("c", plan, 1))
  }).pipe(Effect.provide(NodeRedis.layer({ url: server.url, ...options })), Effect.scoped)

describe("node-redis failures over Effect's Redis service", () => {
  afterAll(() => stopAll())

  it.live(
    '"The client is offline" (Redis gone, offline queue off) is unavailable, in the metric too',
    () =>
      Effect.gen(function* () {
        const server = yield* Effect.promise(() => startRedis())
        const layer = NodeRedis.layer({
          url: server.url,
          disableOfflineQueue: true,
          socket: { reconnectStrategy: () => 100 }
        })
        const registry = new Map()
        const failures = yield* Effect.gen(function* () {
          const quota = yield* Quota.Quota
          expect((yield* quota.check("c")).source).toBe("store")
          yield* Effect.promise(() => server.kill())
          // the client notices the socket closed (a check in flight then: "Socket closed unexpectedly")
          const store = yield* QuotaStore.QuotaStore
          const plan = yield* decodePlan
          let message = ""
          for (let i = 0; i < 100 && message !== "The client is offline"; i++) {
            const error = yield* Effect.flip(store.check("c", plan, 1))
            expect(error.reason).toBe("unavailable")
            message = error.message
            if (message !== "The client is offline") yield* sleep(20)
          }
          expect(message).toBe("The client is offline")
          const decision = yield* quota.check("c")
          expect(decision.source).toBe("fail-closed")
          const snapshots = yield* Metric.snapshot
          return Object.fromEntries(
            snapshots
              .filter((m) => m.id === "sluice_quota_store_failures_total" && m.type === "Counter")
              .map((m) => [String(m.attributes?.["reason"]), Number((m.state as { count: number }).count)])
          )
        }).pipe(
          Effect.provide(
            Quota.layer({ mode: "fail-closed", deadline: "5 seconds" }).pipe(
              Layer.provideMerge(Redis.layerStore({ prefix: `failures:${Math.random()}:` })),
              Layer.provide(QuotaConfig.layer({ default: planInput })),
              Layer.provide(layer)
            )
          ),
          Effect.provideService(Metric.MetricRegistry, registry)
        )
        expect(failures["unavailable"]).toBe(1)
        expect(failures["error"] ?? 0).toBe(0)
      }),
    30_000
  )

  it.live(
    "a queued command node-redis gives up on (its empty TimeoutError) is a timeout",
    () =>
      Effect.gen(function* () {
        const server = yield* Effect.promise(() => startRedis())
        // the offline queue on (node-redis' default): while Redis is gone the check waits in it
        // until the command's own timeout
        const error = yield* failedCheck(
          server,
          { commandOptions: { timeout: 300 }, socket: { reconnectStrategy: () => 100 } },
          Effect.promise(() => server.kill())
        )
        expect(error.reason).toBe("timeout")
        expect(error.message).toBe("TimeoutError")
      }),
    30_000
  )

  it.live(
    '"Socket timeout" (a Redis that stopped answering) is a timeout',
    () =>
      Effect.gen(function* () {
        const server = yield* Effect.promise(() => startRedis())
        const error = yield* failedCheck(
          server,
          { socket: { socketTimeout: 400, reconnectStrategy: () => 100 } },
          Effect.sync(() => server.process.kill("SIGSTOP"))
        )
        server.process.kill("SIGCONT")
        expect(error.reason).toBe("timeout")
        expect(error.message).toMatch(/^Socket timeout/)
      }),
    30_000
  )

  it('"Connection timeout", as NodeRedis fails a command with it, is a timeout', () => {
    // node-redis fails queued commands with it when its reconnect strategy gives up on a connect
    // that hung; NodeRedis wraps every failure in a RedisError
    const error = toStoreError(new PersistenceRedis.RedisError({ cause: new ConnectionTimeoutError() }))
    expect(error.reason).toBe("timeout")
    expect(error.message).toBe("Connection timeout")
  })
})

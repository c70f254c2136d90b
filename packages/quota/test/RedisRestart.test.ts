// Steady traffic across a Redis that loses its state: killed and restarted empty (no
// persistence), or a replica promoted after the primary is killed. Every client must stay within
// plan + plan × fallbackShare across the event: what this instance knew (the store's answers, the
// fallback's own admissions) goes back into the new Redis with the checks that follow.
import { NodeRedis } from "@effect/platform-node"
import { Quota, QuotaConfig } from "@sluice/quota"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import * as Redis from "@sluice/quota/Redis"
import * as IoRedis from "@sluice/quota/IoRedis"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as net from "node:net"
import { freePort, redisCli, startRedis, stopAll } from "./quota/redisServer.js"

const PLAN = 40
const SHARE = 0.25
const CLIENTS = 20
const plan: QuotaConfig.PlanInput = {
  tiers: [{ name: "count", algorithm: "sliding-window", limit: PLAN, period: "1 hour" }]
}

/** A TCP proxy to a Redis port that can be pointed at another one (dropping every connection). */
const switchingProxy = async (initial: number) => {
  let target = initial
  const sockets = new Set<net.Socket>()
  const server = net.createServer((inbound) => {
    const outbound = net.connect(target, "127.0.0.1")
    for (const socket of [inbound, outbound]) {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
      socket.on("error", () => {
        inbound.destroy()
        outbound.destroy()
      })
    }
    inbound.on("data", (chunk) => outbound.write(chunk))
    outbound.on("data", (chunk) => inbound.write(chunk))
    inbound.on("close", () => outbound.destroy())
    outbound.on("close", () => inbound.destroy())
  })
  const port = await freePort()
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return {
    url: `redis://127.0.0.1:${port}`,
    switchTo: (next: number) => {
      target = next
      for (const socket of sockets) socket.destroy()
    },
    close: () => {
      for (const socket of sockets) socket.destroy()
      server.close()
    }
  }
}

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
        Layer.provide(NodeRedis.layer({ url, socket: { reconnectStrategy: () => 50 } }))
      )
  }
]

const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

/**
 * CLIENTS fibers check their client every few ms for `runMs`; `event` runs at `eventAtMs`.
 * Answers the admissions per client.
 */
const traffic = (
  url: string,
  transportIndex: number,
  eventAtMs: number,
  runMs: number,
  event: Effect.Effect<void>
) =>
  Effect.gen(function* () {
    const admitted = new Array<number>(CLIENTS).fill(0)
    const start = Date.now()
    yield* Effect.all(
      [
        Effect.forEach(
          Array.from({ length: CLIENTS }, (_, i) => i),
          (i) =>
            Effect.gen(function* () {
              while (Date.now() - start < runMs) {
                if ((yield* Quota.check(`client-${i}`)).allowed) admitted[i]!++
                yield* sleep(4)
              }
            }),
          { concurrency: "unbounded" }
        ),
        Effect.andThen(sleep(eventAtMs), event)
      ],
      { concurrency: "unbounded" }
    )
    return { admitted }
  }).pipe(
    Effect.provide(
      Quota.layer({ mode: "fallback", fallbackShare: SHARE, deadline: "50 millis" }).pipe(
        Layer.provide(transports[transportIndex]!.store(url, `restart:${Math.random()}:`)),
        Layer.provide(QuotaConfig.layer({ default: plan }))
      )
    )
  )

const bound = PLAN + PLAN * SHARE

/**
 * Most clients got (about) their plan: the traffic reached them. A check in flight when Redis dies
 * may have been counted (and replicated) while its answer was lost, and the fallback decided it,
 * so a client may end a few units short.
 */
const spentTheirPlan = (admitted: ReadonlyArray<number>) =>
  admitted.filter((n) => n >= PLAN - 5).length >= CLIENTS / 2

describe.each(transports.map((t, i) => ({ name: t.name, index: i })))(
  "a Redis that loses its state in steady traffic ($name)",
  ({ index }) => {
    afterAll(() => stopAll())

    it.live(
      "killed and restarted empty: every client within plan + plan × fallbackShare",
      () =>
        Effect.gen(function* () {
          const server = yield* Effect.promise(() => startRedis())
          const { admitted } = yield* traffic(
            server.url,
            index,
            900,
            2600,
            Effect.promise(async () => {
              await server.kill()
              await new Promise((r) => setTimeout(r, 300))
              await server.restart()
            })
          )
          // the clients spent their plan (the traffic reached them: a loaded machine may slow it);
          // none got more than the bound
          expect(spentTheirPlan(admitted), JSON.stringify(admitted)).toBe(true)
          expect(Math.max(...admitted), JSON.stringify(admitted)).toBeLessThanOrEqual(bound)
          yield* Effect.promise(() => server.kill())
        }),
      30_000
    )

    it.live(
      "failover to a replica promoted after the primary is killed: every client within the bound",
      () =>
        Effect.gen(function* () {
          // the primary syncs its replica at once (Redis 7 waits 5 s for more replicas by default)
          const primary = yield* Effect.promise(() =>
            startRedis({ args: ["--repl-diskless-sync-delay", "0"] })
          )
          const replica = yield* Effect.promise(() =>
            startRedis({ args: ["--replicaof", "127.0.0.1", String(primary.port)] })
          )
          yield* Effect.promise(async () => {
            for (let i = 0; i < 100; i++) {
              if (/master_link_status:up/.test(await redisCli(replica.port, "INFO", "replication"))) return
              await new Promise((r) => setTimeout(r, 50))
            }
            throw new Error("the replica did not sync within 5 s")
          })
          const proxy = yield* Effect.promise(() => switchingProxy(primary.port))
          const { admitted } = yield* traffic(
            proxy.url,
            index,
            900,
            2600,
            Effect.promise(async () => {
              await primary.kill()
              await redisCli(replica.port, "REPLICAOF", "NO", "ONE")
              proxy.switchTo(replica.port)
            })
          )
          proxy.close()
          expect(spentTheirPlan(admitted), JSON.stringify(admitted)).toBe(true)
          expect(Math.max(...admitted), JSON.stringify(admitted)).toBeLessThanOrEqual(bound)
          yield* Effect.promise(() => replica.kill())
        }),
      30_000
    )
  }
)

import { Quota, QuotaConfig } from "@sluice/quota"
import * as IoRedis from "@sluice/quota/IoRedis"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Cluster } from "ioredis"
import { freePort, type RedisServer, redisCli, startRedis, stopAll, tmpDir } from "./quota/redisServer.js"

describe("Redis quota store on a three-master Redis Cluster", () => {
  const masters: Array<RedisServer> = []
  let cluster: Cluster

  beforeAll(async () => {
    const dir = tmpDir()
    for (let n = 0; n < 3; n++) {
      const port = await freePort()
      masters.push(
        await startRedis({
          port,
          dir,
          args: ["--cluster-enabled", "yes", "--cluster-config-file", `${dir}/nodes-${n}.conf`]
        })
      )
    }
    await redisCli(
      masters[0]!.port,
      "--cluster",
      "create",
      ...masters.map((m) => `127.0.0.1:${m.port}`),
      "--cluster-replicas",
      "0",
      "--cluster-yes"
    )
    for (let i = 0; i < 200; i++) {
      const states = await Promise.all(masters.map((m) => redisCli(m.port, "CLUSTER", "INFO")))
      if (states.every((s) => s.includes("cluster_state:ok"))) break
      await new Promise((r) => setTimeout(r, 50))
    }
    cluster = new Cluster(
      masters.map((m) => ({ host: "127.0.0.1", port: m.port })),
      { redisOptions: { maxRetriesPerRequest: 1 } }
    )
    await cluster.ping()
  }, 60_000)

  afterAll(async () => {
    cluster?.disconnect()
    await stopAll()
  })

  it.live("checks for many clients pass through an ioredis Cluster client, with no CROSSSLOT", () =>
    Effect.gen(function* () {
      const layer = Quota.layer({ deadline: "2 seconds" }).pipe(
        Layer.provide(IoRedis.layerStore({ client: cluster })),
        Layer.provide(
          QuotaConfig.layer({
            default: {
              tiers: [
                { name: "spike", algorithm: "gcra", limit: 20, period: "1 minute", burst: 4 },
                { name: "count", algorithm: "sliding-window", limit: 3, period: "1 hour" },
                { name: "day", algorithm: "sliding-window", limit: 1000, period: "1 day" }
              ]
            }
          })
        )
      )
      const clients = Array.from({ length: 40 }, (_, i) => `tenant-${i}`)
      const decisions = yield* Effect.forEach(
        clients,
        (client) => Effect.forEach([1, 2, 3, 4], () => Quota.check(client)),
        { concurrency: 10 }
      ).pipe(Effect.provide(layer))
      for (const perClient of decisions) {
        // a store error (CROSSSLOT, MOVED gone wrong, ...) would show up as a fail-open decision
        expect(perClient.map((d) => d.source)).toEqual(["store", "store", "store", "store"])
        expect(perClient.map((d) => d.allowed)).toEqual([true, true, true, false])
        expect(perClient[3]!.deniedBy?.tier).toBe("count")
        expect(perClient[2]!.tiers.map((t) => t.remaining)).toEqual([1, 0, 997])
      }
      // the clients really are spread over the three masters, each client's keys in one slot
      const perNode = yield* Effect.promise(() =>
        Promise.all(masters.map((m) => redisCli(m.port, "DBSIZE").then((s) => Number(s.trim()))))
      )
      expect(perNode.filter((n) => n > 0).length).toBe(3)
      expect(perNode.reduce((a, b) => a + b, 0)).toBe(40)
      const perMaster = yield* Effect.promise(() =>
        Promise.all(masters.map((m) => redisCli(m.port, "KEYS", "sluice:quota:{tenant-7}*")))
      )
      const keys = perMaster.flatMap((out) => out.split("\n").filter((k) => k.length > 0))
      // the client's one key (a hash of all its tiers) lives on one master
      expect(perMaster.filter((out) => out.trim().length > 0).length).toBe(1)
      expect(keys).toEqual(["sluice:quota:{tenant-7}"])
      const slots = yield* Effect.promise(() =>
        Promise.all(
          keys.map((key) => redisCli(masters[0]!.port, "CLUSTER", "KEYSLOT", key).then((s) => s.trim()))
        )
      )
      expect(new Set(slots).size).toBe(1)
    })
  )
})

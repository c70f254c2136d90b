// What a client with a long id costs in memory: the key of an id above `maxClientIdLength` is a
// prefix of the id and its SHA-256, and must not keep the caller's whole id alive (a substring in
// V8 may be a view into the string it was cut from). Measured as retained heap after a full GC.
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import * as IoRedis from "@sluice/quota/IoRedis"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import fc from "fast-check"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { createHash } from "node:crypto"
import { freePort } from "./quota/redisServer.js"
import { wtf8 } from "../../kernel/test/quota/Wtf8.js"

// gc() without starting the worker with --expose-gc (as bench/quota-memory.ts does)
v8.setFlagsFromString("--expose-gc")
const gc = vm.runInNewContext("gc") as () => void
const heapUsed = () => {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

const CLIENTS = 20_000
// hashing 20,000 ids of 10 KB takes seconds on a loaded machine
const TIMEOUT = 120_000
const ID_LENGTH = 10_240
const filler = "x".repeat(ID_LENGTH)
/** a distinct 10 KB id, made when it is checked and dropped after (only the store may keep it) */
const longId = (i: number) => `${i}:${filler}`.slice(0, ID_LENGTH)

// one check keeps a client's state for at least an hour: every client stays in the store
const plan: QuotaConfig.PlanInput = {
  tiers: [{ name: "count", algorithm: "sliding-window", limit: 5000, period: "1 hour" }]
}

/** retained bytes per client after one check each of CLIENTS distinct long ids */
const bytesPerClient = Effect.gen(function* () {
  const quota = yield* Quota.Quota
  // the paths run (and their code and caches are made) before the measurement starts
  for (let i = 0; i < 200; i++) yield* quota.check(`warm-up-${i}:${filler}`)
  const before = heapUsed()
  for (let i = 0; i < CLIENTS; i++) {
    const decision = yield* quota.check(longId(i))
    if (!decision.allowed)
      throw new Error(`client ${i} was denied: the measurement needs every client stored`)
  }
  return Math.round((heapUsed() - before) / CLIENTS)
})

describe("Quota: a long client id is not kept whole", () => {
  it.effect("the key is the id's first code units, `#` and its SHA-256, whatever the characters", () =>
    Effect.gen(function* () {
      const quota = yield* Quota.Quota
      // astral characters (surrogate pairs, one may be cut at the prefix's end) and lone surrogates
      const ids = fc.sample(fc.string({ unit: "binary", minLength: 101, maxLength: 400 }), {
        numRuns: 200,
        seed: 8
      })
      ids.push("é".repeat(300), "😀".repeat(150), "\ud800".repeat(120))
      for (const id of ids) {
        const key = quota.storedId(id)
        expect(key).toBe(`${id.slice(0, 35)}#${createHash("sha256").update(wtf8(id)).digest("hex")}`)
        expect(key).toHaveLength(100)
      }
    }).pipe(
      Effect.provide(
        Quota.layer({ maxClientIdLength: 100 }).pipe(
          Layer.provide(QuotaStore.layerMemory()),
          Layer.provide(QuotaConfig.layer({ default: plan }))
        )
      )
    )
  )

  it.effect(
    `memory store: ${CLIENTS} distinct 10 KB ids cost well under 2 KB each`,
    () =>
      Effect.gen(function* () {
        const bytes = yield* bytesPerClient
        const store = (yield* QuotaStore.QuotaStore) as QuotaStore.MemoryStore
        expect(yield* store.size).toBe(CLIENTS + 200)
        expect(bytes, `${bytes} bytes per client`).toBeLessThan(2048)
      }).pipe(
        Effect.provide(
          Quota.layer().pipe(
            Layer.provideMerge(QuotaStore.layerMemory({ maxClients: 4 * CLIENTS })),
            Layer.provide(QuotaConfig.layer({ default: plan }))
          )
        )
      ),
    TIMEOUT
  )

  it.live(
    `the fallback behind the Redis store: ${CLIENTS} distinct 10 KB ids cost well under 2 KB each`,
    () =>
      Effect.gen(function* () {
        // a Redis that cannot be reached: every check is decided by the fallback
        const port = yield* Effect.promise(() => freePort())
        const bytes = yield* bytesPerClient.pipe(
          Effect.tap(() =>
            Effect.flatMap(Quota.check("last"), (d) => Effect.sync(() => expect(d.source).toBe("fallback")))
          ),
          Effect.provide(
            Quota.layer({ mode: "fallback" }).pipe(
              Layer.provide(IoRedis.layerStoreShared({ prefix: "test:long-ids:" })),
              Layer.provide(QuotaConfig.layer({ default: plan })),
              Layer.provide(IoRedisClient.layer({ url: `redis://127.0.0.1:${port}` }))
            )
          )
        )
        expect(bytes, `${bytes} bytes per client`).toBeLessThan(2048)
      }),
    TIMEOUT
  )
})

/**
 * The Redis store's two transports, for tests run on both against the real Redis: ioredis (a
 * connection of the store's own) and Effect's `Redis` service from `NodeRedis` (node-redis).
 */
import { NodeRedis } from "@effect/platform-node"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import type { QuotaStore } from "@sluice/quota"
import * as Redis from "@sluice/quota/Redis"
import * as IoRedis from "@sluice/quota/IoRedis"
import { Effect, Layer, type Scope } from "effect"
import { makeStore } from "../../src/internal/ioRedisStore.js"
import { makeStoreEffect } from "../../src/internal/redisTransportStore.js"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"

export interface Transport {
  readonly name: string
  /** The store on a connection opened for it, closed with the scope. */
  readonly makeStore: (
    prefix: string,
    maxBaked?: number
  ) => Effect.Effect<QuotaStore.Store, unknown, Scope.Scope>
  /** The store as a layer on a connection opened for it. */
  readonly layerStore: (prefix: string) => Layer.Layer<QuotaStore.QuotaStore, unknown>
  /** The plan store on a connection opened for it, closed with the scope. */
  readonly makeConfig: (
    options: Redis.PlanStoreOptions
  ) => Effect.Effect<Effect.Success<ReturnType<typeof IoRedis.makeConfig>>, unknown, Scope.Scope>
}

/** Effect's `Redis` (and `NodeRedis`) in the scope. */
const nodeRedis = Layer.build(NodeRedis.layer({ url: REDIS_URL }))

export const transports: ReadonlyArray<Transport> = [
  {
    name: "ioredis",
    makeStore: (prefix, maxBaked) =>
      Effect.flatMap(IoRedisClient.client({ url: REDIS_URL }), (client) =>
        makeStore(client, prefix, maxBaked)
      ),
    layerStore: (prefix) => IoRedis.layerStore({ url: REDIS_URL, prefix }),
    makeConfig: (options) => IoRedis.makeConfig({ url: REDIS_URL, ...options })
  },
  {
    name: "NodeRedis",
    makeStore: (prefix, maxBaked) =>
      Effect.flatMap(nodeRedis, (context) =>
        Effect.provideContext(makeStoreEffect(prefix, maxBaked), context)
      ),
    layerStore: (prefix) =>
      Redis.layerStore({ prefix }).pipe(Layer.provide(NodeRedis.layer({ url: REDIS_URL }))),
    makeConfig: (options) =>
      Effect.flatMap(nodeRedis, (context) => Effect.provideContext(Redis.makeConfig(options), context))
  }
]

import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { InvalidOptions } from "@sluice/core/Options"
import { IoRedisClient } from "@sluice/core/IoRedisClient"
import type * as QuotaConfigNs from "../QuotaConfig.js"
import type { QuotaStoreError } from "./quotaPlan.js"
import type { Client } from "./ioRedisStore.js"
import { type ConfigOptions, makeConfigOn, type PlanConnection } from "./redisPlanStore.js"
import { toStoreError } from "./redisTransportStore.js"

const fromPromise = <A>(f: () => Promise<A>): Effect.Effect<A, QuotaStoreError> =>
  Effect.tryPromise({ try: f, catch: toStoreError })

/** The plan source's commands over an ioredis client. @internal */
export const ioredisConnection = (redis: Client): PlanConnection => ({
  hgetall: (key) => fromPromise(() => redis.hgetall(key)),
  get: (key) => fromPromise(() => redis.get(key)),
  set: (key, value) => Effect.asVoid(fromPromise(() => redis.set(key, value))),
  hset: (key, field, value) => Effect.asVoid(fromPromise(() => redis.hset(key, field, value))),
  hdel: (key, field) => Effect.asVoid(fromPromise(() => redis.hdel(key, field)))
})

/** The plan source on the shared client. @internal */
export const makeConfig = (
  options: ConfigOptions
): Effect.Effect<
  QuotaConfigNs.Service<QuotaStoreError> & { readonly refresh: Effect.Effect<void, QuotaStoreError> },
  InvalidOptions,
  IoRedisClient | Scope.Scope
> => Effect.flatMap(IoRedisClient, ({ client }) => makeConfigOn(ioredisConnection(client), options))

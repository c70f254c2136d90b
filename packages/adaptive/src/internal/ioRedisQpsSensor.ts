import * as IoRedisClient from "@sluice/core/IoRedisClient"
import * as Effect from "effect/Effect"
import type * as R from "../IoRedisQpsSensor.js"
import { type SensorConnection, start } from "./redisSensor.js"

/** The sensor's commands over an ioredis client: one pipeline per flush. @internal */
export const ioredisConnection = (redis: IoRedisClient.Client): SensorConnection => ({
  add: (counts, ttlSeconds) =>
    Effect.tryPromise(() => {
      const pipeline = redis.pipeline()
      for (const [key, n] of counts) {
        pipeline.incrby(key, n)
        pipeline.expire(key, ttlSeconds)
      }
      return pipeline.exec()
    }).pipe(
      Effect.flatMap((results) =>
        results !== null && results.every(([error]) => error === null) ? Effect.void : Effect.fail(results)
      )
    ),
  mget: (keys) => Effect.tryPromise(() => redis.mget(...keys))
})

// The sensor over a client: its own connection (`make`) or the app's shared one.
const startOn = <Env>(
  options: R.IoRedisQpsSensorOptions,
  connect: (connection: IoRedisClient.ConnectionOptions) => Effect.Effect<SensorConnection, never, Env>
) =>
  Effect.suspend(() => {
    const { client, redisOptions, url, ...rest } = options
    return start(rest, connect({ client, redisOptions, url }))
  })

/** @internal */
export const make = (options: R.IoRedisQpsSensorOptions) =>
  startOn(options, (connection) => Effect.map(IoRedisClient.client(connection), ioredisConnection))

/** The sensor on the app's shared client (`@sluice/core/IoRedisClient`). @internal */
export const makeShared = (options: R.IoRedisQpsSensorOptions) =>
  startOn(options, () =>
    Effect.map(IoRedisClient.IoRedisClient, (shared) => ioredisConnection(shared.client))
  )

import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { RedisOptions } from "ioredis"
import { Redis as IORedis } from "ioredis"
import type { Client, ConnectionOptions } from "../IoRedisClient.js"

/** @internal */
export const defaultRedisOptions: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  // no auto-pipelining: it defers every command to the next event-loop turn (setImmediate) and
  // wraps it in a pipeline and a promise, which costs a sequential check tens of microseconds on
  // loopback and did not raise throughput with 100 checks in flight (bench/quota.ts); commands
  // issued together still share the socket, one EVALSHA each
  enableAutoPipelining: false,
  commandTimeout: 1000,
  connectTimeout: 1000,
  enableReadyCheck: true,
  retryStrategy: (times) => Math.min(10 * times, 100)
}

/** @internal */
export const acquire = (options: ConnectionOptions = {}): Effect.Effect<Client, never, Scope.Scope> => {
  if (options.client !== undefined) return Effect.succeed(options.client)
  return Effect.acquireRelease(
    Effect.gen(function* () {
      const url =
        options.url ??
        (yield* Config.String("REDIS_URL").pipe(
          Config.withDefault("redis://127.0.0.1:6379"),
          Effect.orElseSucceed(() => "redis://127.0.0.1:6379")
        ))
      const redisOptions = { ...defaultRedisOptions, ...options.redisOptions }
      const redis = new IORedis(url, redisOptions)
      // errors surface per command; without a listener ioredis would print them
      redis.on("error", () => {})
      return redis as Client
    }),
    (redis) =>
      Effect.callback<void>((resume) => {
        redis.quit(() => resume(Effect.void))
      }).pipe(
        Effect.interruptible,
        Effect.timeoutOption(Duration.seconds(1)),
        Effect.ensuring(Effect.sync(() => redis.disconnect()))
      )
  ).pipe(Effect.tap((redis) => waitReady(redis as IORedis, options.redisOptions?.connectTimeout ?? 1000)))
}

// outside acquireRelease: the acquisition is uninterruptible, and this wait must time out
const waitReady = (redis: IORedis, timeoutMs: number): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    if (redis.status === "ready") return resume(Effect.void)
    const done = () => {
      redis.off("ready", done)
      resume(Effect.void)
    }
    redis.on("ready", done)
    return Effect.sync(() => redis.off("ready", done))
  }).pipe(Effect.timeoutOption(Duration.millis(timeoutMs)), Effect.asVoid)

import * as Kernel from "@sluice/kernel/sample/QpsSensor"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redis from "effect/persistence/Redis"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { Options } from "@sluice/core"
import type * as E from "../RedisQpsSensor.js"
import type * as Q from "../QpsSensor.js"
import { Window } from "./qpsSensor.js"
import { Millis, options, Service, withDefault } from "./service.js"

// The Redis sensor over its commands, and its commands over Effect's `Redis` service. Nothing
// here may load `ioredis` (`@sluice/adaptive/RedisQpsSensor` imports this file): the
// commands over ioredis are in `IoRedisQpsSensor.ts`.

const millis = (fallback: number) => withDefault(Millis, fallback)

const { decode } = options(
  "IoRedisQpsSensor",
  Schema.Struct({
    key: Schema.NonEmptyString,
    prefix: withDefault(Schema.String, Kernel.defaults.prefix),
    window: Window,
    flushInterval: millis(Kernel.defaults.flushInterval),
    settle: millis(Kernel.defaults.settle),
    timeout: millis(Kernel.defaults.timeout),
    ttl: Schema.optional(Millis)
  }),
  Kernel.issues
)

type Decoded = Effect.Success<ReturnType<typeof decode>>

/** @internal */
export const keyFor = Kernel.keyFor

/** The two things the sensor asks of Redis. @internal */
export interface SensorConnection {
  /** `INCRBY` + `EXPIRE` per key, sent together; fails if any command failed. */
  readonly add: (
    counts: ReadonlyArray<readonly [string, number]>,
    ttlSeconds: number
  ) => Effect.Effect<void, unknown>
  readonly mget: (keys: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string | null>, unknown>
}

/**
 * The sensor's commands over Effect's `Redis` service: a flush's commands are all sent at once
 * (node-redis writes them in one batch).
 *
 * @internal
 */
export const effectConnection = (redis: Redis.Redis["Service"]): SensorConnection => ({
  add: (counts, ttlSeconds) =>
    Effect.all(
      counts.flatMap(([key, n]) => [
        redis.send("INCRBY", key, String(n)),
        redis.send("EXPIRE", key, String(ttlSeconds))
      ]),
      { concurrency: "unbounded", discard: true }
    ),
  mget: (keys) =>
    Effect.map(redis.send<ReadonlyArray<unknown>>("MGET", ...keys), (replies) =>
      replies.map((reply) => (reply === null || reply === undefined ? null : String(reply)))
    )
})

class RedisSensor extends Service implements Q.Service {
  private readonly pending = new Kernel.SecondCounts(Infinity)
  private readonly ttlSeconds: number
  constructor(
    private readonly redis: SensorConnection,
    private readonly o: Decoded
  ) {
    super()
    this.ttlSeconds = Kernel.ttlSeconds(o.ttl, o.window)
  }
  recordUnsafe(nowMillis: number, n: number): void {
    this.pending.add(Kernel.secondOf(nowMillis), n)
  }
  /** Sends the local tally; on failure the tally is dropped (the reading goes stale instead). */
  get flush(): Effect.Effect<boolean> {
    return Effect.suspend(() => {
      if (this.pending.size === 0) return Effect.succeed(true)
      const batch = this.pending.drain()
      const counts = Array.from(
        batch,
        ([second, n]) => [keyFor(this.o.prefix, this.o.key, second), n] as const
      )
      return this.redis.add(counts, this.ttlSeconds).pipe(
        Effect.as(true),
        Effect.timeoutOption(this.o.timeout),
        Effect.map(Option.getOrElse(() => false)),
        Effect.orElseSucceed(() => false)
      )
    })
  }
  get measure(): Effect.Effect<Option.Option<Q.Reading>> {
    const { o, redis } = this
    const flush = this.flush
    return Effect.gen(function* () {
      const flushed = yield* flush
      if (!flushed) return Option.none()
      const now = yield* Clock.currentTimeMillis
      const range = Kernel.readableSeconds(now, Number.NEGATIVE_INFINITY, o.window, o.settle)
      if (range === undefined) return Option.none()
      const keys = Kernel.keysFor(o.prefix, o.key, range)
      const values = yield* redis.mget(keys).pipe(
        Effect.timeoutOption(o.timeout),
        Effect.orElseSucceed(() => Option.none<ReadonlyArray<string | null>>())
      )
      return Option.map(values, (replies) => Kernel.fromReplies(replies, now))
    })
  }
}

/** The sensor over its commands; its flush loop lives as long as the scope. @internal */
export const start = <R>(
  options: E.SensorOptions,
  connect: Effect.Effect<SensorConnection, never, R>
): Effect.Effect<Q.Service, Options.InvalidOptions, R | Scope.Scope> =>
  Effect.gen(function* () {
    const o = yield* decode(options)
    const sensor = new RedisSensor(yield* connect, o)
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(o.flushInterval), sensor.flush)))
    // what was counted but not yet sent goes out when the scope closes
    yield* Effect.addFinalizer(() => sensor.flush)
    return sensor as Q.Service
  })

/** The sensor on Effect's `Redis` service (e.g. `NodeRedis`). @internal */
export const makeEffect = (options: E.SensorOptions) =>
  start(options, Effect.map(Redis.Redis, effectConnection))

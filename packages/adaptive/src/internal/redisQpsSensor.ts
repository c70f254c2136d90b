import { Options } from "@sluice/core"
import * as RedisClient from "@sluice/core/RedisClient"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Q from "../QpsSensor.js"
import type * as R from "../RedisQpsSensor.js"
import { readableSeconds } from "./qpsSensor.js"
import { bindMethods } from "./bind.js"

const RedisQpsSensorOptions = Schema.Struct({
  key: Schema.NonEmptyString,
  prefix: Schema.optionalWith(Schema.String, { default: () => "sluice:qps:" }),
  window: Schema.optionalWith(Options.PositiveInt, { default: () => 2 }),
  flushInterval: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.millis(100) }),
  settle: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.millis(300) }),
  timeout: Schema.optionalWith(Options.PositiveDuration, { default: () => Duration.millis(250) }),
  ttl: Schema.optional(Options.PositiveDuration)
})

type Decoded = Schema.Schema.Type<typeof RedisQpsSensorOptions>

/** @internal */
export const keyFor = (prefix: string, key: string, second: number): string => `${prefix}{${key}}:${second}`

class RedisSensor implements Q.Service {
  protected readonly bound = bindMethods(this, ["unsafeRecord"])
  private pending = new Map<number, number>()
  private readonly ttlSeconds: number
  private readonly settleMillis: number
  constructor(
    private readonly redis: RedisClient.Client,
    private readonly o: Decoded
  ) {
    this.ttlSeconds = Math.max(1, Math.ceil(o.ttl === undefined ? o.window + 60 : Duration.toSeconds(o.ttl)))
    this.settleMillis = Duration.toMillis(o.settle)
  }
  unsafeRecord(nowMillis: number, n: number): void {
    const second = Math.floor(nowMillis / 1000)
    this.pending.set(second, (this.pending.get(second) ?? 0) + n)
  }
  /** Sends the local tally; on failure the tally is dropped (the reading goes stale instead). */
  get flush(): Effect.Effect<boolean> {
    return Effect.suspend(() => {
      if (this.pending.size === 0) return Effect.succeed(true)
      const batch = this.pending
      this.pending = new Map()
      return Effect.tryPromise(() => {
        const pipeline = this.redis.pipeline()
        for (const [second, n] of batch) {
          const key = keyFor(this.o.prefix, this.o.key, second)
          pipeline.incrby(key, n)
          pipeline.expire(key, this.ttlSeconds)
        }
        return pipeline.exec()
      }).pipe(
        Effect.map((results) => results !== null && results.every(([error]) => error === null)),
        Effect.timeoutOption(this.o.timeout),
        Effect.map(Option.getOrElse(() => false)),
        Effect.orElseSucceed(() => false)
      )
    })
  }
  get measure(): Effect.Effect<Option.Option<Q.Reading>> {
    return Effect.gen(this, function* () {
      const flushed = yield* this.flush
      if (!flushed) return Option.none()
      const now = yield* Clock.currentTimeMillis
      const range = readableSeconds(now, Number.NEGATIVE_INFINITY, this.o.window, this.settleMillis)
      if (range === undefined) return Option.none()
      const [from, to] = range
      const keys: Array<string> = []
      for (let s = from; s <= to; s++) keys.push(keyFor(this.o.prefix, this.o.key, s))
      const values = yield* Effect.tryPromise(() => this.redis.mget(...keys)).pipe(
        Effect.timeoutOption(this.o.timeout),
        Effect.orElseSucceed(() => Option.none<Array<string | null>>())
      )
      if (Option.isNone(values)) return Option.none()
      let sum = 0
      for (const v of values.value) sum += v === null ? 0 : Number(v)
      return Option.some({ qps: sum / keys.length, at: now })
    })
  }
}

const decode = Options.decode(
  "RedisQpsSensor",
  RedisQpsSensorOptions as unknown as Schema.Schema<Decoded, R.RedisQpsSensorOptions>
)

/** @internal */
export const make = (options: R.RedisQpsSensorOptions) =>
  Effect.gen(function* () {
    const { client, redisOptions, url, ...rest } = options
    const o = yield* decode(rest)
    const redis = yield* RedisClient.client({ client, redisOptions, url })
    return yield* start(redis, o)
  })

/** The sensor on the app's shared client (`@sluice/core/RedisClient`). @internal */
export const makeShared = (options: R.RedisQpsSensorOptions) =>
  Effect.gen(function* () {
    const { client: _client, redisOptions: _redisOptions, url: _url, ...rest } = options
    const o = yield* decode(rest)
    const { client } = yield* RedisClient.RedisClient
    return yield* start(client, o)
  })

const start = (redis: RedisClient.Client, o: Decoded) =>
  Effect.gen(function* () {
    const sensor = new RedisSensor(redis, o)
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(o.flushInterval), sensor.flush)))
    // what was counted but not yet sent goes out when the scope closes
    yield* Effect.addFinalizer(() => sensor.flush)
    return sensor as Q.Service
  })

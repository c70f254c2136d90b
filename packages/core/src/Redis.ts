/**
 * Redis for Sluice quotas: a shared {@link QuotaStore} and a shared plan source.
 *
 * This is the only module that imports `ioredis` (an optional peer dependency):
 * import it as `@sluice/core/Redis`; `@sluice/core` itself never loads it.
 *
 * The store checks and updates every tier of a plan in ONE round trip: a single
 * Lua script run with `EVALSHA` (sent again with `EVAL` when Redis answers
 * `NOSCRIPT`), reading the time from Redis (`TIME`, no client clock), declaring
 * every key in `KEYS`, all of a client's keys sharing the hash tag `{client}` so
 * Redis Cluster routes them to one slot, and every key carrying a TTL.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { createHash } from "node:crypto"
import type { Cluster, RedisOptions } from "ioredis"
import { Redis as IORedis } from "ioredis"
import * as configInternal from "./internal/quotaConfig.js"
import type { CompiledPlan, Plan, PlanInput, StoreResult } from "./internal/quotaPlan.js"
import { decide, QuotaStoreError } from "./internal/quotaPlan.js"
import type { Store } from "./internal/quotaStore.js"
import type { InvalidOptions } from "./Options.js"
import { QuotaConfig } from "./QuotaConfig.js"
import type * as QuotaConfigNs from "./QuotaConfig.js"
import { QuotaStore } from "./QuotaStore.js"

/**
 * A standalone or cluster ioredis client.
 *
 * @since 0.1.0
 */
export type Client = IORedis | Cluster

/**
 * The Lua script that decides every tier of a plan at once, on ONE hash per
 * client. Times are integer microseconds from `TIME` (read once). Hash fields:
 * `gcra` `<tier>|g` (theoretical arrival time); `sliding-window` `<tier>|w`
 * (window number), `<tier>|c` and `<tier>|p` (units admitted in the current and
 * the previous fixed window). One `HMGET` reads every tier; only when every tier
 * admits, one `HSET` writes them all and one `PEXPIRE` sets the key's TTL (until
 * every tier is full again), so a denied request writes nothing. The formulas are
 * those of the memory store (see `QuotaConfig`), in the same order.
 *
 * ARGV: cost, tier count, field count, the fields, then per tier kind (`g`/`s`),
 * capacity, period (µs), emission interval (µs per unit). Reply: time (µs),
 * all-allowed, the state before consumption rolled to that time (gcra: `tat` −
 * time in nanoseconds; sliding-window: window, current, previous), then per tier
 * 1/0 whether it admits. The client derives remaining, reset and retry-after
 * from it, so the script does no more arithmetic than the decision needs.
 *
 * @since 0.1.0
 */
export const script = `
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local cost = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local nf = tonumber(ARGV[3])
local v = redis.call('HMGET', KEYS[1], unpack(ARGV, 4, 3 + nf))
local out = { now, 1 }
local all = true
local a = 4 + nf
local f = 1
for i = 1, n do
  local cap = tonumber(ARGV[a + 1])
  local ok
  if ARGV[a] == 'g' then
    local em = tonumber(ARGV[a + 3])
    local tat = tonumber(v[f]) or 0
    if tat < now then tat = now end
    ok = tat + cost * em - cap * em <= now
    v[f] = tat
    out[2 + f] = (tat - now) * 1000
    f = f + 1
  else
    local per = tonumber(ARGV[a + 2])
    local w = math.floor(now / per)
    local sw = tonumber(v[f])
    local c, p = 0, 0
    if sw == w then
      c = tonumber(v[f + 1])
      p = tonumber(v[f + 2])
    elseif sw == w - 1 then
      p = tonumber(v[f + 1])
    end
    ok = p * (per - (now - w * per)) + (c + cost) * per <= cap * per
    v[f] = w
    v[f + 1] = c
    v[f + 2] = p
    out[2 + f] = w
    out[3 + f] = c
    out[4 + f] = p
    f = f + 3
  end
  out[2 + nf + i] = ok and 1 or 0
  if not ok then all = false end
  a = a + 4
end
if not all then
  out[2] = 0
  return out
end
local hs = {}
local ttl = 1
a = 4 + nf
f = 1
for i = 1, n do
  if ARGV[a] == 'g' then
    local tat = v[f] + cost * tonumber(ARGV[a + 3])
    hs[2 * f - 1] = ARGV[3 + f]
    hs[2 * f] = tat
    if tat - now > ttl then ttl = tat - now end
    f = f + 1
  else
    local next = (v[f] + 2) * tonumber(ARGV[a + 2]) - now
    hs[2 * f - 1] = ARGV[3 + f]
    hs[2 * f] = v[f]
    hs[2 * f + 1] = ARGV[4 + f]
    hs[2 * f + 2] = v[f + 1] + cost
    hs[2 * f + 3] = ARGV[5 + f]
    hs[2 * f + 4] = v[f + 2]
    if next > ttl then ttl = next end
    f = f + 3
  end
  a = a + 4
end
redis.call('HSET', KEYS[1], unpack(hs))
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl / 1000))
return out
`

/**
 * The SHA1 of {@link script}, as `EVALSHA` wants it.
 *
 * @since 0.1.0
 */
export const scriptSha: string = createHash("sha1").update(script).digest("hex")

/**
 * Where the client comes from: an existing ioredis client (standalone or
 * cluster; you own it, it is not closed), a URL, or — when neither is given —
 * the `REDIS_URL` config (default `redis://127.0.0.1:6379`).
 *
 * @since 0.1.0
 */
export interface ConnectionOptions {
  readonly client?: Client | undefined
  readonly url?: string | undefined
  /** extra ioredis options for a client built here */
  readonly redisOptions?: RedisOptions | undefined
}

/**
 * Options of a client built here. A quota check must never wait behind a dead
 * connection: commands fail at once while disconnected (no offline queue, no
 * retries), a command the server never answers is dropped after
 * `commandTimeout`, and reconnection is quick so recovery is seen within one
 * breaker probe interval.
 *
 * @since 0.1.0
 */
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

/**
 * Acquires a client: the given one as is, or a new one closed with the scope.
 * Waits (at most `connectTimeout`) for a new client to be ready; if Redis is not
 * there yet the client keeps reconnecting and checks go to the failure mode.
 *
 * @since 0.1.0
 */
export const client = (options: ConnectionOptions = {}): Effect.Effect<Client, never, Scope.Scope> => {
  if (options.client !== undefined) return Effect.succeed(options.client)
  return Effect.acquireRelease(
    Effect.gen(function* () {
      const url =
        options.url ??
        (yield* Config.string("REDIS_URL").pipe(
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
      Effect.async<void>((resume) => {
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
  Effect.async<void>((resume) => {
    if (redis.status === "ready") return resume(Effect.void)
    const done = () => {
      redis.off("ready", done)
      resume(Effect.void)
    }
    redis.on("ready", done)
    return Effect.sync(() => redis.off("ready", done))
  }).pipe(Effect.timeoutOption(Duration.millis(timeoutMs)), Effect.asVoid)

/**
 * Store options: the connection and a key prefix (default `sluice:quota:`).
 *
 * @since 0.1.0
 */
export interface StoreOptions extends ConnectionOptions {
  readonly prefix?: string | undefined
}

const errorReason = (error: Error): "unavailable" | "error" | "timeout" =>
  /timed out/i.test(error.message)
    ? "timeout"
    : /writeable|closed|ECONNREFUSED|ECONNRESET|EPIPE|not connected|Connection is closed|LOADING|MasterDown|CLUSTERDOWN/i.test(
          error.message
        )
      ? "unavailable"
      : "error"

/**
 * The key of a client: one hash holding every tier's state, under the hash tag
 * `{client}` (Redis Cluster routes it by the client). The plan does not change
 * the key: its tiers are fields of the hash.
 *
 * @since 0.1.0
 */
export const keyFor = (prefix: string, client: string): string => `${prefix}{${client}}`

/**
 * The keys of a client for a plan (one: see {@link keyFor}).
 *
 * @since 0.1.0
 */
export const keysFor = (prefix: string, client: string, _plan: CompiledPlan): Array<string> => [
  keyFor(prefix, client)
]

const parseReply = (reply: Array<number>, plan: CompiledPlan, cost: number): StoreResult => {
  const now = reply[0]!
  const allowed = reply[1] === 1
  const tiers = plan.tiers
  const nf = plan.stateSize
  const state: Array<number> = new Array(nf)
  for (let i = 0; i < nf; i++) state[i] = reply[2 + i]!
  const ok: Array<boolean> = new Array(tiers.length)
  for (let i = 0; i < tiers.length; i++) {
    ok[i] = reply[2 + nf + i] === 1
    const tier = tiers[i]!
    // gcra: tat − now came in whole nanoseconds
    if (tier.algorithm === "gcra") state[tier.offset] = now + state[tier.offset]! / 1000
  }
  return { allowed, tiers: decide(tiers, state, cost, now, true, allowed, ok), now: now / 1000 }
}

/**
 * Makes the Redis store from a client. One `EVALSHA` per check.
 *
 * @since 0.1.0
 */
export const makeStoreFromClient = (redis: Client, prefix = "sluice:quota:"): Store => {
  const name = "redis"
  const toError = (error: unknown) => {
    const e = error instanceof Error ? error : new Error(String(error))
    return new QuotaStoreError({ store: name, reason: errorReason(e), message: e.message })
  }
  const checkCallback: NonNullable<Store["checkCallback"]> = (client, plan, cost, callback) => {
    // EVALSHA sha 1 key cost ...plan's prebuilt arguments
    const tail = plan.redisArgs
    const args: Array<string | number> = new Array(3 + tail.length)
    args[0] = scriptSha
    args[1] = 1
    args[2] = prefix + "{" + client + "}"
    args[3] = cost
    for (let i = 1; i < tail.length; i++) args[3 + i] = tail[i]!
    const settle = (error: Error | null | undefined, reply: unknown) => {
      if (error) return callback(toError(error), undefined)
      let result: StoreResult
      try {
        result = parseReply(reply as Array<number>, plan, cost)
      } catch (e) {
        return callback(toError(e), undefined)
      }
      callback(undefined, result)
    }
    try {
      ;(redis as any).evalsha(...args, (error: Error | null | undefined, reply: unknown) => {
        if (error && error.message.startsWith("NOSCRIPT")) {
          // the server lost its script cache (restart, SCRIPT FLUSH, another cluster node): EVAL loads it
          args[0] = script
          try {
            ;(redis as any).eval(...args, settle)
          } catch (e) {
            callback(toError(e), undefined)
          }
          return
        }
        settle(error, reply)
      })
    } catch (e) {
      callback(toError(e), undefined)
    }
  }
  return {
    name,
    remote: true,
    checkCallback,
    check: (client, plan, cost) =>
      Effect.async<StoreResult, QuotaStoreError>((resume) => {
        checkCallback(client, plan, cost, (error, result) =>
          resume(error === undefined ? Effect.succeed(result!) : Effect.fail(error))
        )
      })
  }
}

/**
 * Makes the Redis store.
 *
 * @since 0.1.0
 */
export const makeStore = (options: StoreOptions = {}): Effect.Effect<Store, never, Scope.Scope> =>
  Effect.gen(function* () {
    const redis = yield* client(options)
    // load the script up front, and again after every reconnection (a restarted server has an
    // empty script cache), so checks are a single EVALSHA; NOSCRIPT still recovers otherwise
    const load = (done: () => void) => {
      try {
        ;(redis as any).script("LOAD", script, () => done())
      } catch {
        done()
      }
    }
    const onReady = () => load(() => {})
    redis.on("ready", onReady)
    yield* Effect.addFinalizer(() => Effect.sync(() => redis.off("ready", onReady)))
    yield* Effect.async<void>((resume) => load(() => resume(Effect.void))).pipe(
      Effect.timeoutOption(Duration.seconds(1))
    )
    return makeStoreFromClient(redis, options.prefix)
  })

/**
 * The Redis {@link QuotaStore}.
 *
 * @example
 * ```ts
 * import { Quota, QuotaConfig } from "@sluice/core"
 * import * as Redis from "@sluice/core/Redis"
 * import { Layer } from "effect"
 *
 * const QuotaLive = Quota.layer({ mode: "fail-open", deadline: "15 millis" }).pipe(
 *   Layer.provide(Redis.layerRedis({ url: "redis://127.0.0.1:6379" })),
 *   Layer.provide(
 *     QuotaConfig.layer({
 *       default: {
 *         tiers: [
 *           { name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 },
 *           { name: "count", algorithm: "sliding-window", limit: 5000, period: "1 hour" }
 *         ]
 *       }
 *     })
 *   )
 * )
 * ```
 * @since 0.1.0
 */
export const layerRedis = (options: StoreOptions = {}): Layer.Layer<QuotaStore> =>
  Layer.scoped(QuotaStore, makeStore(options))

// ---- plans in Redis -------------------------------------------------------

/**
 * A plan as JSON (periods in milliseconds), as the config source stores it.
 *
 * @since 0.1.0
 */
export const planToJson = (plan: Plan): string =>
  JSON.stringify({
    tiers: plan.tiers.map((tier) => ({
      name: tier.name,
      algorithm: tier.algorithm,
      limit: tier.limit,
      period: Duration.toMillis(tier.period),
      ...(tier.burst === undefined ? {} : { burst: tier.burst })
    }))
  })

/**
 * Options of the Redis plan source: a hash `key` (default `sluice:quota:plans`)
 * mapping client → plan JSON, the default plan, and how often to refresh the
 * local cache (default 5 seconds).
 *
 * @since 0.1.0
 */
export interface ConfigOptions extends ConnectionOptions {
  readonly key?: string | undefined
  readonly default: PlanInput | Plan
  readonly refresh?: Duration.DurationInput | undefined
}

const redisError = (error: unknown) =>
  new QuotaStoreError({
    store: "redis",
    reason: "error",
    message: error instanceof Error ? error.message : String(error)
  })

/**
 * A {@link QuotaConfig} whose overrides live in a Redis hash, so every instance
 * sees the same plans. Reads are served from a local cache refreshed in the
 * background; a plan in Redis that does not decode is logged (naming the field)
 * and the previous plan for that client stays. `setPlan` validates, writes the
 * hash, and takes effect here at once.
 *
 * @example
 * ```ts
 * import * as Redis from "@sluice/core/Redis"
 *
 * const ConfigLive = Redis.layerConfig({
 *   key: "sluice:quota:plans",
 *   refresh: "5 seconds",
 *   default: { tiers: [{ name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 }] }
 * })
 * ```
 * @since 0.1.0
 */
export const makeConfig = (
  options: ConfigOptions
): Effect.Effect<
  QuotaConfigNs.Service & { readonly refresh: Effect.Effect<void, QuotaStoreError> },
  InvalidOptions,
  Scope.Scope
> =>
  Effect.gen(function* () {
    const redis = yield* client(options)
    const key = options.key ?? "sluice:quota:plans"
    const table = yield* configInternal.makeTable({ default: options.default })
    const refresh: Effect.Effect<void, QuotaStoreError> = Effect.tryPromise({
      try: () => redis.hgetall(key),
      catch: redisError
    }).pipe(
      Effect.flatMap((hash) =>
        Effect.gen(function* () {
          const next = new Map<string, CompiledPlan>()
          for (const [clientId, json] of Object.entries(hash)) {
            let parsed: unknown
            try {
              parsed = JSON.parse(json)
            } catch {
              parsed = json
            }
            const decoded = configInternal.decodePlan(parsed, `client ${JSON.stringify(clientId)}`)
            if (Either.isRight(decoded)) next.set(clientId, decoded.right)
            else {
              const previous = table.table.get(clientId)
              if (previous !== undefined) next.set(clientId, previous)
              yield* Effect.logWarning(`${decoded.left.message}\n(the previous plan stays in force)`)
            }
          }
          table.replaceOverrides(next)
        })
      )
    )
    const refreshLogged = refresh.pipe(
      Effect.catchAll((e) => Effect.logWarning(`QuotaConfig: cannot read plans from Redis: ${e.message}`))
    )
    yield* refreshLogged
    yield* Effect.sleep(options.refresh ?? Duration.seconds(5)).pipe(
      Effect.zipRight(refreshLogged),
      Effect.forever,
      Effect.forkScoped
    )
    const service = configInternal.serviceFromTable(table, {
      onSet: (clientId, plan) =>
        Effect.tryPromise({
          try: () => redis.hset(key, clientId, planToJson(plan.plan)),
          catch: redisError
        }).pipe(Effect.asVoid, Effect.orDie),
      onRemove: (clientId) =>
        Effect.tryPromise({ try: () => redis.hdel(key, clientId), catch: redisError }).pipe(
          Effect.asVoid,
          Effect.orDie
        )
    })
    return { ...service, refresh }
  })

/**
 * The Redis plan source as a layer.
 *
 * @since 0.1.0
 */
export const layerConfig = (options: ConfigOptions): Layer.Layer<QuotaConfig, InvalidOptions> =>
  Layer.scoped(QuotaConfig, makeConfig(options))

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
import type { CompiledPlan, Plan, PlanInput, StoreResult, TierDecision } from "./internal/quotaPlan.js"
import { QuotaStoreError } from "./internal/quotaPlan.js"
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
 * The Lua script that decides every tier of a plan at once. Times are integer
 * microseconds from `TIME`. KEYS: per tier, `gcra` one string (its theoretical
 * arrival time), `sliding-window` a sorted set of admitted `seq:cost` entries
 * scored by time plus a hash with their sum. ARGV: cost, tier count, then per tier
 * kind (`g`/`s`), capacity, period (µs), emission interval (µs per unit).
 * Reply: seconds, microseconds, all-allowed, then per tier allowed, remaining,
 * reset (ms), retry-after (ms).
 *
 * @since 0.1.0
 */
export const script = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local cost = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local st = {}
local all = true
local k = 1
for i = 1, n do
  local a = i * 4 - 1
  local cap = tonumber(ARGV[a + 1])
  local ok
  if ARGV[a] == 'g' then
    local em = tonumber(ARGV[a + 3])
    local tat = tonumber(redis.call('GET', KEYS[k]) or 0)
    if tat < now then tat = now end
    st[i] = tat
    ok = tat + cost * em - cap * em <= now
    k = k + 1
  else
    local log, meta = KEYS[k], KEYS[k + 1]
    local m = redis.call('HMGET', meta, 's', 'q')
    local sum = tonumber(m[1] or 0)
    local cutoff = now - tonumber(ARGV[a + 2])
    local old = redis.call('ZRANGEBYSCORE', log, '-inf', cutoff)
    if #old > 0 then
      for j = 1, #old do sum = sum - tonumber(string.match(old[j], ':(%d+)$')) end
      redis.call('ZREMRANGEBYSCORE', log, '-inf', cutoff)
      if sum < 0 or redis.call('ZCARD', log) == 0 then sum = 0 end
      redis.call('HSET', meta, 's', sum)
    end
    st[i] = sum
    st[n + i] = tonumber(m[2] or 0)
    ok = sum + cost <= cap
    k = k + 2
  end
  st[2 * n + i] = ok
  if not ok then all = false end
end
local out = { t[1], t[2], all and 1 or 0 }
k = 1
for i = 1, n do
  local a = i * 4 - 1
  local cap = tonumber(ARGV[a + 1])
  local ok = st[2 * n + i]
  local key = KEYS[k]
  local o = #out
  if ARGV[a] == 'g' then
    local em = tonumber(ARGV[a + 3])
    local tat = st[i]
    local tau = cap * em
    local newTat = tat + cost * em
    local at = tat
    if all then
      at = newTat
      redis.call('SET', key, newTat, 'PX', math.ceil((newTat - now) / 1000) + 1)
    end
    local remaining = math.floor((tau - (at - now)) / em + 1e-9)
    if remaining < 0 then remaining = 0 end
    out[o + 1] = ok and 1 or 0
    out[o + 2] = remaining
    out[o + 3] = math.ceil((at - now) / 1000)
    if ok then out[o + 4] = 0 else out[o + 4] = math.ceil((newTat - tau - now) / 1000) end
    k = k + 1
  else
    local period = tonumber(ARGV[a + 2])
    local meta = KEYS[k + 1]
    local sum = st[i]
    local retry = 0
    local reset
    if not ok then
      local need = sum + cost - cap
      retry = math.ceil(period / 1000)
      if need <= sum then
        local freed = 0
        local entries = redis.call('ZRANGE', key, 0, need - 1, 'WITHSCORES')
        for j = 1, #entries, 2 do
          freed = freed + tonumber(string.match(entries[j], ':(%d+)$'))
          if freed >= need then
            retry = math.ceil((tonumber(entries[j + 1]) + period - now) / 1000)
            break
          end
        end
      end
    end
    if all then
      local seq = st[n + i] + 1
      sum = sum + cost
      redis.call('ZADD', key, now, seq .. ':' .. cost)
      redis.call('HSET', meta, 's', sum, 'q', seq)
      local ttl = math.ceil(period / 1000) + 1
      redis.call('PEXPIRE', key, ttl)
      redis.call('PEXPIRE', meta, ttl)
      reset = math.ceil(period / 1000)
    else
      local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
      if #last == 0 then reset = 0 else reset = math.ceil((tonumber(last[2]) + period - now) / 1000) end
    end
    out[o + 1] = ok and 1 or 0
    out[o + 2] = cap - sum
    out[o + 3] = reset
    out[o + 4] = retry
    k = k + 2
  end
end
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
  // concurrent checks issued in the same tick leave in one socket write (each is still its own EVALSHA)
  enableAutoPipelining: true,
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
 * The keys of a client for a plan, all sharing the hash tag `{client}`.
 *
 * @since 0.1.0
 */
export const keysFor = (prefix: string, client: string, plan: CompiledPlan): Array<string> => {
  const base = `${prefix}{${client}}:`
  const keys: Array<string> = []
  for (const tier of plan.tiers) {
    if (tier.algorithm === "gcra") keys.push(`${base}${tier.name}:g`)
    else keys.push(`${base}${tier.name}:s`, `${base}${tier.name}:sm`)
  }
  return keys
}

const parseReply = (reply: Array<unknown>, plan: CompiledPlan): StoreResult => {
  const tiers: Array<TierDecision> = new Array(plan.tiers.length)
  for (let i = 0; i < plan.tiers.length; i++) {
    const tier = plan.tiers[i]!
    const o = 3 + i * 4
    tiers[i] = {
      tier: tier.name,
      algorithm: tier.algorithm,
      allowed: reply[o] === 1,
      limit: tier.capacity,
      remaining: reply[o + 1] as number,
      resetMs: reply[o + 2] as number,
      retryAfterMs: reply[o + 3] as number
    }
  }
  return {
    allowed: reply[2] === 1,
    tiers,
    now: Number(reply[0]) * 1000 + Number(reply[1]) / 1000
  }
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
    const keys = keysFor(prefix, client, plan)
    const args: Array<string | number> = [keys.length, ...keys, cost, ...plan.redisArgs]
    const settle = (error: Error | null | undefined, reply: unknown) => {
      if (error) return callback(toError(error), undefined)
      let result: StoreResult
      try {
        result = parseReply(reply as Array<unknown>, plan)
      } catch (e) {
        return callback(toError(e), undefined)
      }
      callback(undefined, result)
    }
    try {
      ;(redis as any).evalsha(scriptSha, ...args, (error: Error | null | undefined, reply: unknown) => {
        if (error && error.message.startsWith("NOSCRIPT")) {
          // the server lost its script cache (restart, SCRIPT FLUSH, another cluster node): EVAL loads it
          try {
            ;(redis as any).eval(script, ...args, settle)
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

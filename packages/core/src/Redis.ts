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
import { Command, Redis as IORedis } from "ioredis"
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

/** A tier name as a Lua string literal: safe bytes as they are, any other byte as `\ddd`. */
const luaString = (text: string): string => {
  let out = '"'
  for (const byte of Buffer.from(text, "utf8")) {
    out += /[-A-Za-z0-9_|.:]/.test(String.fromCharCode(byte))
      ? String.fromCharCode(byte)
      : "\\" + String(byte).padStart(3, "0")
  }
  return out + '"'
}

/**
 * The Lua script that decides every tier of a plan at once, on ONE hash per
 * client. It is generated for the plan's shape (tier names and algorithms, in
 * order), straight-line code with the hash fields written in, so Redis runs no
 * loop and parses no more arguments than the numbers; plans of the same shape
 * share it. Times are integer microseconds from `TIME` (read once). Hash fields:
 * `gcra` `<tier>|q` (theoretical arrival time in quarter-microseconds: an emission
 * interval need not be whole microseconds, and a double near today's epoch in µs
 * resolves exactly a quarter, so four times it is an exact integer, written as
 * cheaply as the others); `sliding-window` `<tier>|w`
 * (window number), `<tier>|c` and `<tier>|p` (units admitted in the current and
 * the previous fixed window); `|x` when the key's TTL runs out. One `HMGET` reads
 * every tier; only when every tier admits, one `HSET` writes them all, so a denied
 * request writes nothing. The key's TTL always outlasts the instant every tier is
 * full again; when that instant passes `|x`, `PEXPIRE` sets it further by a slack
 * (half as long again, at least a second), so most checks need no `PEXPIRE`. The
 * formulas are those of the memory store, in the same order.
 *
 * What Redis spends per check is mostly its three calls (about 12 of the 19 µs a
 * two-tier check took under `redis-benchmark`); of the rest, the script keeps the
 * reply short (the window number is the client's `floor(time / period)`, and the
 * per-tier verdicts come only with a denial) and writes the fields as `%d`
 * strings rather than numbers Redis formats with `%.17g` (together about 1 µs).
 *
 * ARGV: cost, then per tier capacity and emission interval (gcra, µs per unit)
 * or period (sliding-window, µs). Reply: time (µs), all-allowed (1/0), the state
 * before consumption rolled to that time (gcra: `tat` − time in nanoseconds;
 * sliding-window: current, previous), then, only when denied, per tier 1/0
 * whether it admits. The client derives remaining, reset and retry-after from it.
 *
 * @since 0.1.0
 */
export const scriptFor = (plan: CompiledPlan): string => {
  const fields: Array<string> = []
  const lines: Array<string> = [
    "local t = redis.call('TIME')",
    "local now = t[1] * 1000000 + t[2]",
    "local k = KEYS[1]",
    "local num, fmt = tonumber, string.format",
    "local cost = num(ARGV[1])"
  ]
  for (const tier of plan.tiers) {
    if (tier.algorithm === "gcra") fields.push(luaString(`${tier.name}|q`))
    else fields.push(luaString(`${tier.name}|w`), luaString(`${tier.name}|c`), luaString(`${tier.name}|p`))
  }
  // "|x": when the key's TTL runs out (µs), so the TTL is renewed only when it must grow
  lines.push(
    `local v = redis.call('HMGET', k, ${fields.join(", ")}, "|x")`,
    `local x = num(v[${fields.length + 1}]) or 0`
  )
  const state: Array<string> = []
  const oks: Array<string> = []
  const writes: Array<string> = []
  const ttls: Array<string> = []
  let f = 1
  plan.tiers.forEach((tier, i) => {
    const n = i + 1
    const cap = `cap${n}`
    lines.push(`local ${cap} = num(ARGV[${2 * i + 2}])`)
    if (tier.algorithm === "gcra") {
      lines.push(
        `local em${n} = num(ARGV[${2 * i + 3}])`,
        `local tat${n} = (num(v[${f}]) or 0) / 4`,
        `if tat${n} < now then tat${n} = now end`,
        `local ok${n} = tat${n} + cost * em${n} - ${cap} * em${n} <= now`
      )
      state.push(`(tat${n} - now) * 1000`)
      writes.push(`${fields[f - 1]}, fmt('%d', math.floor((tat${n} + cost * em${n}) * 4 + 0.5))`)
      ttls.push(`tat${n} + cost * em${n}`)
      f += 1
    } else {
      lines.push(
        `local per${n} = num(ARGV[${2 * i + 3}])`,
        `local w${n} = math.floor(now / per${n})`,
        `local sw${n} = num(v[${f}])`,
        `local c${n}, p${n} = 0, 0`,
        `if sw${n} == w${n} then c${n} = num(v[${f + 1}]) or 0; p${n} = num(v[${f + 2}]) or 0 ` +
          `elseif sw${n} == w${n} - 1 then p${n} = num(v[${f + 1}]) or 0 end`,
        `local ok${n} = p${n} * (per${n} - (now - w${n} * per${n})) + (c${n} + cost) * per${n} <= ${cap} * per${n}`
      )
      state.push(`c${n}`, `p${n}`)
      writes.push(
        `${fields[f - 1]}, fmt('%d', w${n}), ${fields[f]}, fmt('%d', c${n} + cost), ${fields[f + 1]}, fmt('%d', p${n})`
      )
      ttls.push(`(w${n} + 2) * per${n}`)
      f += 3
    }
    oks.push(`ok${n}`)
  })
  const all = oks.join(" and ")
  lines.push(
    `if not (${all}) then`,
    `  return { now, 0, ${state.join(", ")}, ${oks.map((ok) => `${ok} and 1 or 0`).join(", ")} }`,
    "end",
    // every tier is full again at `full`; the TTL is set past it with a slack (half as long again,
    // at least a second), so most checks find it long enough and skip PEXPIRE
    `local full = ${ttls[0]}`,
    ...ttls.slice(1).map((expr) => `if ${expr} > full then full = ${expr} end`),
    "if full > x then",
    "  local slack = (full - now) / 2",
    "  if slack < 1000000 then slack = 1000000 end",
    `  redis.call('HSET', k, ${writes.join(", ")}, "|x", fmt('%d', math.ceil(full + slack)))`,
    "  redis.call('PEXPIRE', k, math.ceil((full + slack - now) / 1000))",
    "else",
    `  redis.call('HSET', k, ${writes.join(", ")})`,
    "end",
    `return { now, 1, ${state.join(", ")} }`
  )
  return lines.join("\n") + "\n"
}

/**
 * At most this many checks share one socket write (with 100 checks in flight, batches of 8
 * to 32 were within noise of each other; one write per tick and batches of 64 were slower).
 */
const WRITE_BATCH = 16

const sha1 = (text: string): string => createHash("sha1").update(text).digest("hex")

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
  const state: Array<number> = new Array(plan.stateSize)
  const ok: Array<boolean> = new Array(tiers.length)
  // the reply's state after time and verdict: gcra `tat − now` (ns); sliding-window current, previous
  let r = 2
  for (let i = 0; i < tiers.length; i++) {
    const tier = tiers[i]!
    const o = tier.offset
    if (tier.algorithm === "gcra") {
      state[o] = now + reply[r++]! / 1000
    } else {
      // the window number, as the script computed it: floor(time / period), both in whole µs
      state[o] = Math.floor(now / tier.periodUs)
      state[o + 1] = reply[r++]!
      state[o + 2] = reply[r++]!
    }
  }
  // per-tier verdicts follow only a denial; when allowed, every tier admitted
  for (let i = 0; i < tiers.length; i++) ok[i] = allowed || reply[r + i] === 1
  return { allowed, tiers: decide(tiers, state, cost, now, true, allowed, ok), now: now / 1000 }
}

/**
 * The generated scripts by plan shape (see {@link scriptFor}), with their SHA1.
 *
 * @since 0.1.0
 */
export class ScriptCache {
  private readonly byShape = new Map<string, { readonly script: string; readonly sha: string }>()
  /** called with each script the first time its shape is seen */
  onNew: ((script: string) => void) | undefined = undefined

  get(plan: CompiledPlan): { readonly script: string; readonly sha: string } {
    let entry = this.byShape.get(plan.shape)
    if (entry === undefined) {
      const script = scriptFor(plan)
      entry = { script, sha: sha1(script) }
      this.byShape.set(plan.shape, entry)
      this.onNew?.(script)
    }
    return entry
  }

  get scripts(): ReadonlyArray<string> {
    return Array.from(this.byShape.values(), (entry) => entry.script)
  }
}

/**
 * Makes the Redis store from a client. One `EVALSHA` per check.
 *
 * @since 0.1.0
 */
export const makeStoreFromClient = (
  redis: Client,
  prefix = "sluice:quota:",
  scripts: ScriptCache = new ScriptCache()
): Store => {
  const name = "redis"
  const scriptOf = (plan: CompiledPlan) => scripts.get(plan)
  // Checks issued in the same tick (e.g. many fibers resumed by one batch of replies) leave in
  // few socket writes: the first corks the connection's socket, every WRITE_BATCH-th flushes
  // what is corked so far (Redis starts on those while this process builds the rest: with one
  // write per tick, Redis idled while Node prepared the whole batch and Node idled while Redis
  // ran it, which halved throughput with 100 checks in flight), and the end of the tick flushes
  // the rest, so nothing waits for a later event-loop turn (unlike ioredis' auto-pipelining).
  // Each check is still its own EVALSHA. A cluster client has a socket per node: not corked.
  type Corkable = { cork?: () => void; uncork?: () => void }
  /** the socket corked in this tick (a reconnection may replace the client's socket meanwhile) */
  let corked: Corkable | undefined = undefined
  let batched = 0
  /** checks sent and not answered yet */
  let inFlight = 0
  const cork = () => {
    if (corked !== undefined) {
      if (++batched >= WRITE_BATCH) {
        batched = 0
        corked.uncork!()
        corked.cork!()
      }
      return
    }
    const stream = (redis as { stream?: Corkable }).stream
    // a check while no other is waiting for Redis (e.g. sequential checks) leaves at once
    if (inFlight === 0 || stream === undefined || typeof stream.cork !== "function") return
    stream.cork()
    corked = stream
    batched = 0
    process.nextTick(() => {
      corked = undefined
      stream.uncork!()
    })
  }
  const toError = (error: unknown) => {
    const e = error instanceof Error ? error : new Error(String(error))
    // fields known valid: skip the constructor's Schema validation on this failure path
    return new QuotaStoreError({ store: name, reason: errorReason(e), message: e.message }, true)
  }
  // Commands go straight to `sendCommand` (no variadic command method: no rest arrays, no
  // options object per call), with the client's own key prefix, if it has one.
  const keyPrefix = (redis as { options?: { keyPrefix?: string } }).options?.keyPrefix
  const commandOptions =
    keyPrefix === undefined
      ? { replyEncoding: "utf8" as const }
      : { replyEncoding: "utf8" as const, keyPrefix }
  const checkCallback: NonNullable<Store["checkCallback"]> = (client, plan, cost, callback) => {
    // EVALSHA sha 1 key cost ...plan's prebuilt arguments
    const compiled = scriptOf(plan)
    const tail = plan.redisArgs
    const args: Array<string> = new Array(3 + tail.length)
    args[0] = compiled.sha
    args[1] = "1"
    args[2] = prefix + "{" + client + "}"
    args[3] = cost === 1 ? "1" : String(cost)
    for (let i = 1; i < tail.length; i++) args[3 + i] = tail[i]!
    let loaded = false
    const onReply = (error: Error | null | undefined, reply: unknown): void => {
      if (error && !loaded && error.message.startsWith("NOSCRIPT")) {
        // the server lost its script cache (restart, SCRIPT FLUSH, another cluster node): EVAL loads it
        loaded = true
        args[0] = compiled.script
        try {
          redis.sendCommand(new Command("eval", args, commandOptions, onReply))
        } catch (e) {
          onReply(e as Error, undefined)
        }
        return
      }
      inFlight--
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
      cork()
      inFlight++
      redis.sendCommand(new Command("evalsha", args, commandOptions, onReply))
    } catch (e) {
      loaded = true
      onReply(e as Error, undefined)
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
    // load each shape's script when it is first seen (sent before that check's EVALSHA on the same
    // connection), and all of them again after every reconnection (a restarted server has an empty
    // script cache), so checks are a single EVALSHA; NOSCRIPT still recovers otherwise
    const scripts = new ScriptCache()
    const load = (script: string) => {
      try {
        ;(redis as any).script("LOAD", script, () => {})
      } catch {
        // not connected: the reconnection reloads it, or NOSCRIPT does
      }
    }
    scripts.onNew = load
    const onReady = () => {
      for (const script of scripts.scripts) load(script)
    }
    redis.on("ready", onReady)
    yield* Effect.addFinalizer(() => Effect.sync(() => redis.off("ready", onReady)))
    return makeStoreFromClient(redis, options.prefix, scripts)
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

import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { createHash } from "node:crypto"
import type { Cluster, Redis as IORedis } from "ioredis"
import { Command } from "ioredis"
import type { CompiledPlan, StoreResult, TierDecision, TierView } from "./quotaPlan.js"
import { blockTiers, decideTier, QuotaStoreError } from "./quotaPlan.js"
import type { Store } from "./quotaStore.js"

/** @internal */
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
 * The tiers spelled out for a script that loops over them (the adjust script): per tier
 * its kind (`g`/`s`), name, capacity, period (ms) and limit.
 *
 * @internal
 */
export const tierSpecArgs = (plan: CompiledPlan): Array<string> => {
  const args: Array<string> = []
  for (const tier of plan.tiers)
    args.push(
      tier.algorithm === "gcra" ? "g" : "s",
      tier.name,
      String(tier.capacity),
      String(tier.periodMs),
      String(tier.limit)
    )
  return args
}

/**
 * The Lua script that decides every tier of a plan at once, on ONE hash per client. It is
 * generated for the plan's shape (tier names and algorithms, in order): straight-line code with
 * the hash fields written in, so Redis runs no loop and parses no more arguments than the
 * numbers; plans of the same shape share it. (A static script looping over the tiers, with the
 * field names and algorithms as arguments, parses three more arguments and builds the field
 * list per call: `bench/quota.ts` measured it slower, see the README.)
 *
 * The arithmetic is that of `quotaPlan.ts`, in whole milliseconds and integers only (Lua's
 * numbers are doubles: every integer formed stays below 2^53, which the plan schema
 * guarantees), so the memory and Redis stores decide alike, decision for decision. Time is
 * `TIME` floored to the millisecond, read once.
 *
 * Hash fields: gcra `<tier>|t` and `<tier>|r` (the theoretical arrival time's whole
 * milliseconds and the remainder in 1/limit ms); sliding-window `<tier>|w` (window number),
 * `<tier>|c`, `<tier>|p`; `|e` when the key's TTL runs out (ms), `|b` blocked until (ms). One
 * `HMGET` reads them all; only an admitted request (or a denial that starts a block) writes,
 * with one `HSET` of the fields that change (a sliding window's number and previous count only
 * when it rolled: two fields fewer on most checks, 0.2–0.9 µs less Redis time per two-tier check
 * in `INFO commandstats`); the TTL is renewed (with a slack of half
 * as long again, at least a second) only when it must grow.
 *
 * ARGV: cost (0: a peek, decided as one unit, nothing written), block duration (ms, 0: none),
 * then per tier capacity, period (ms), limit. Reply: time (ms), allowed (1/0), blocked for
 * (ms, 0 when not blocked), the state before consumption rolled to that time (gcra: the debt
 * `(tat − time) × limit`; sliding-window: current, previous), then, when not allowed, per tier
 * 1/0 whether it admits. The client derives remaining, reset and retry-after from it with the
 * memory store's functions.
 *
 * @internal
 */
export const scriptFor = (plan: CompiledPlan): string => {
  const fields: Array<string> = []
  const lines: Array<string> = [
    "local t = redis.call('TIME')",
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)",
    "local k = KEYS[1]",
    "local num, fmt, floor = tonumber, string.format, math.floor",
    "local cost = num(ARGV[1])",
    "local peek = cost == 0",
    "if peek then cost = 1 end"
  ]
  for (const tier of plan.tiers) {
    if (tier.algorithm === "gcra") fields.push(luaString(`${tier.name}|t`), luaString(`${tier.name}|r`))
    else fields.push(luaString(`${tier.name}|w`), luaString(`${tier.name}|c`), luaString(`${tier.name}|p`))
  }
  lines.push(
    `local v = redis.call('HMGET', k, ${fields.join(", ")}, "|e", "|b")`,
    `local e = num(v[${fields.length + 1}]) or 0`,
    `local b = num(v[${fields.length + 2}]) or 0`
  )
  const state: Array<string> = []
  const oks: Array<string> = []
  const consume: Array<string> = []
  const writes: Array<string> = []
  /** the writes when no sliding window rolled: its window number and previous count stay */
  const counts: Array<string> = []
  /** a sliding window rolled (or is new): then every field is written */
  const rolled: Array<string> = []
  const fulls: Array<string> = []
  let f = 1
  plan.tiers.forEach((tier, i) => {
    const n = i + 1
    const a = 3 + 3 * i
    lines.push(`local cap${n}, per${n} = num(ARGV[${a}]), num(ARGV[${a + 1}])`)
    if (tier.algorithm === "gcra") {
      lines.push(
        `local lim${n} = num(ARGV[${a + 2}])`,
        `local t${n} = num(v[${f}]) or 0`,
        `local r${n} = num(v[${f + 1}]) or 0`,
        `if t${n} < now then t${n} = now; r${n} = 0 end`,
        `local d${n} = (t${n} - now) * lim${n} + r${n}`,
        `local ok${n} = cost <= cap${n} and d${n} <= (cap${n} - cost) * per${n}`
      )
      state.push(`d${n}`)
      consume.push(
        `local D${n} = d${n} + cost * per${n}`,
        `local q${n} = floor(D${n} / lim${n})`,
        `local m${n} = D${n} - q${n} * lim${n}`,
        `if m${n} < 0 then q${n} = q${n} - 1; m${n} = m${n} + lim${n} elseif m${n} >= lim${n} then q${n} = q${n} + 1; m${n} = m${n} - lim${n} end`
      )
      writes.push(`${fields[f - 1]}, fmt('%d', now + q${n}), ${fields[f]}, fmt('%d', m${n})`)
      counts.push(writes[writes.length - 1]!)
      fulls.push(`now + q${n} + (m${n} > 0 and 1 or 0)`)
      f += 2
    } else {
      lines.push(
        `local w${n} = floor(now / per${n})`,
        `local sw${n} = num(v[${f}])`,
        `local c${n}, p${n} = 0, 0`,
        `if sw${n} == w${n} then c${n} = num(v[${f + 1}]) or 0; p${n} = num(v[${f + 2}]) or 0 ` +
          `elseif sw${n} == w${n} - 1 then p${n} = num(v[${f + 1}]) or 0 end`,
        `local room${n} = cap${n} - c${n} - cost`,
        `local ok${n} = room${n} >= 0 and p${n} * (per${n} - (now - w${n} * per${n})) <= room${n} * per${n}`
      )
      state.push(`c${n}`, `p${n}`)
      writes.push(
        `${fields[f - 1]}, fmt('%d', w${n}), ${fields[f]}, fmt('%d', c${n} + cost), ${fields[f + 1]}, fmt('%d', p${n})`
      )
      counts.push(`${fields[f]}, fmt('%d', c${n} + cost)`)
      rolled.push(`sw${n} ~= w${n}`)
      fulls.push(`(w${n} + 2) * per${n}`)
      f += 3
    }
    oks.push(`ok${n}`)
  })
  const all = oks.join(" and ")
  const okList = oks.map((ok) => `${ok} and 1 or 0`).join(", ")
  lines.push(
    "if b > now then",
    `  return { now, 0, b - now, ${state.join(", ")}, ${okList} }`,
    "end",
    `local all = ${all}`,
    "if peek then",
    `  if all then return { now, 1, 0, ${state.join(", ")} } end`,
    `  return { now, 0, 0, ${state.join(", ")}, ${okList} }`,
    "end",
    "if not all then",
    "  local block = num(ARGV[2])",
    "  if block > 0 then",
    "    b = now + block",
    "    if b > e then",
    "      redis.call('HSET', k, '|b', fmt('%d', b), '|e', fmt('%d', b))",
    "      redis.call('PEXPIRE', k, block)",
    "    else",
    "      redis.call('HSET', k, '|b', fmt('%d', b))",
    "    end",
    "  end",
    `  return { now, 0, 0, ${state.join(", ")}, ${okList} }`,
    "end",
    ...consume,
    // every tier is full again at `full`; the TTL is set past it with a slack (half as long
    // again, at least a second), so most checks find it long enough and skip PEXPIRE
    `local full = ${fulls[0]}`,
    ...fulls.slice(1).map((expr) => `if ${expr} > full then full = ${expr} end`),
    "if full > e then",
    "  local slack = floor((full - now) / 2)",
    "  if slack < 1000 then slack = 1000 end",
    `  redis.call('HSET', k, ${writes.join(", ")}, "|e", fmt('%d', full + slack))`,
    "  redis.call('PEXPIRE', k, full + slack - now)",
    ...(rolled.length === 0
      ? ["else", `  redis.call('HSET', k, ${writes.join(", ")})`, "end"]
      : [
          // within the same windows only the counts (and gcra state) change
          `elseif ${rolled.join(" or ")} then`,
          `  redis.call('HSET', k, ${writes.join(", ")})`,
          "else",
          `  redis.call('HSET', k, ${counts.join(", ")})`,
          "end"
        ]),
    `return { now, 1, 0, ${state.join(", ")} }`
  )
  return lines.join("\n") + "\n"
}

/**
 * Penalty, reward and block: a static script looping over the tiers (not on the hot path).
 * ARGV: units (added to every tier's count, clamped to [0, capacity]; negative: a reward),
 * block duration (ms, 0: none), then per tier: kind (g / s), field prefix, capacity, period
 * (ms), limit. The key is deleted when the result equals a new client's state.
 *
 * @internal
 */
export const ADJUST_SCRIPT = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local k = KEYS[1]
local num, fmt, floor = tonumber, string.format, math.floor
local units = num(ARGV[1])
local block = num(ARGV[2])
local b = num(redis.call('HGET', k, '|b')) or 0
if block > 0 and now + block > b then b = now + block end
local writes = {}
local full = now
local i = 3
while i <= #ARGV do
  local kind, name = ARGV[i], ARGV[i + 1]
  local cap, per, lim = num(ARGV[i + 2]), num(ARGV[i + 3]), num(ARGV[i + 4])
  if kind == 'g' then
    local v = redis.call('HMGET', k, name .. '|t', name .. '|r')
    local tt, r = num(v[1]) or 0, num(v[2]) or 0
    if tt < now then tt = now; r = 0 end
    local d = (tt - now) * lim + r + units * per
    if d < 0 then d = 0 end
    if d > cap * per then d = cap * per end
    local q = floor(d / lim)
    local m = d - q * lim
    if m < 0 then q = q - 1; m = m + lim elseif m >= lim then q = q + 1; m = m - lim end
    table.insert(writes, name .. '|t'); table.insert(writes, fmt('%d', now + q))
    table.insert(writes, name .. '|r'); table.insert(writes, fmt('%d', m))
    local at = now + q + (m > 0 and 1 or 0)
    if at > full then full = at end
  else
    local v = redis.call('HMGET', k, name .. '|w', name .. '|c', name .. '|p')
    local w = floor(now / per)
    local sw = num(v[1])
    local c, p = 0, 0
    if sw == w then c = num(v[2]) or 0; p = num(v[3]) or 0 elseif sw == w - 1 then p = num(v[2]) or 0 end
    c = c + units
    if c < 0 then c = 0 end
    if c > cap then c = cap end
    table.insert(writes, name .. '|w'); table.insert(writes, fmt('%d', w))
    table.insert(writes, name .. '|c'); table.insert(writes, fmt('%d', c))
    table.insert(writes, name .. '|p'); table.insert(writes, fmt('%d', p))
    local at = now
    if c > 0 then at = (w + 2) * per elseif p > 0 then at = (w + 1) * per end
    if at > full then full = at end
  end
  i = i + 5
end
if b > full then full = b end
if full <= now then
  redis.call('DEL', k)
  return 0
end
local slack = floor((full - now) / 2)
if slack < 1000 then slack = 1000 end
table.insert(writes, '|e'); table.insert(writes, fmt('%d', full + slack))
table.insert(writes, '|b'); table.insert(writes, fmt('%d', b))
redis.call('HSET', k, unpack(writes))
redis.call('PEXPIRE', k, full + slack - now)
return 1
`

/**
 * At most this many checks share one socket write (with 100 checks in flight, batches of 8
 * to 32 were within noise of each other; one write per tick and batches of 64 were slower).
 */
const WRITE_BATCH = 16

const sha1 = (text: string): string => createHash("sha1").update(text).digest("hex")

const errorReason = (error: Error): "unavailable" | "error" | "timeout" =>
  /timed out/i.test(error.message)
    ? "timeout"
    : /writeable|closed|ECONNREFUSED|ECONNRESET|EPIPE|not connected|Connection is closed|LOADING|MasterDown|CLUSTERDOWN/i.test(
          error.message
        )
      ? "unavailable"
      : "error"

/** Decodes a script reply into the decisions (the memory store's functions on Redis' state). @internal */
export const parseReply = (reply: ReadonlyArray<number>, plan: CompiledPlan, cost: number): StoreResult => {
  const now = reply[0]!
  const allowed = reply[1] === 1
  const blockedMs = reply[2]!
  const tiers = plan.tiers
  const peek = cost === 0
  const k = peek ? 1 : cost
  const consumed = allowed && !peek
  const decisions: Array<TierDecision> = new Array(tiers.length)
  let r = 3
  // the reply holds one number per gcra tier and two per sliding-window tier
  const okAt = 3 + plan.stateSize - tiers.length
  const view: TierView = { a: 0, b: 0, start: 0 }
  for (let i = 0; i < tiers.length; i++) {
    const tier = tiers[i]!
    if (tier.algorithm === "gcra") {
      view.a = reply[r++]!
      view.b = 0
      view.start = 0
    } else {
      view.a = reply[r++]!
      view.b = reply[r++]!
      view.start = Math.floor(now / tier.periodMs) * tier.periodMs
    }
    // per-tier verdicts follow unless every tier admitted
    const ok = allowed || reply[okAt + i] === 1
    decisions[i] = decideTier(tier, view, k, now, ok, consumed)
  }
  return blockedMs > 0
    ? { allowed: false, tiers: blockTiers(decisions, blockedMs), now, blockedMs }
    : { allowed, tiers: decisions, now }
}

/** The generated scripts by plan shape, with their SHA1. @internal */
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

const ADJUST_SHA = sha1(ADJUST_SCRIPT)

const noTimer = (): void => {}

/** Makes the Redis store from a client. One `EVALSHA` per check. @internal */
export const makeStoreFromClient = (
  redis: Client,
  prefix = "sluice:quota:",
  scripts: ScriptCache = new ScriptCache()
): Store => {
  const name = "redis"
  // Checks issued in the same tick (e.g. many fibers resumed by one batch of replies) leave in
  // few socket writes: the first corks the connection's socket, every WRITE_BATCH-th flushes
  // what is corked so far (Redis starts on those while this process builds the rest: with one
  // write per tick, Redis idled while Node prepared the whole batch and Node idled while Redis
  // ran it, which halved throughput with 100 checks in flight), and the end of the tick flushes
  // the rest, so nothing waits for a later event-loop turn (unlike ioredis' auto-pipelining).
  // Each check is still its own EVALSHA. A cluster client has a socket per node: not corked.
  // `stream` is ioredis' socket, not a public field: without it, checks are written one by one.
  type Corkable = { cork?: () => void; uncork?: () => void }
  let corked: Corkable | undefined = undefined
  let batched = 0
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
  const keyPrefix = (redis as { options?: { keyPrefix?: string } }).options?.keyPrefix
  const commandOptions =
    keyPrefix === undefined
      ? { replyEncoding: "utf8" as const }
      : { replyEncoding: "utf8" as const, keyPrefix }
  const keyOf = (client: string) => prefix + "{" + client + "}"

  /**
   * EVALSHA, falling back to EVAL once on NOSCRIPT (restart, SCRIPT FLUSH, another node).
   * `bounded`: the caller bounds the call itself (a check: `Quota`'s deadline queue), so the
   * command skips ioredis' `commandTimeout` timer — a Node timer armed and cleared per command,
   * about 1.5 µs of a 45 µs loopback round trip (measured with `commandTimeout` 1000 against
   * none, sequential EVALSHA).
   */
  const run = (
    sha: string,
    script: string,
    args: Array<string>,
    callback: (error: Error | null | undefined, reply: unknown) => void,
    bounded = false
  ) => {
    let loaded = false
    const send = (name: string) => {
      const command = new Command(name, args, commandOptions, onReply)
      if (bounded) command.setTimeout = noTimer
      redis.sendCommand(command)
    }
    const onReply = (error: Error | null | undefined, reply: unknown): void => {
      if (error && !loaded && error.message.startsWith("NOSCRIPT")) {
        loaded = true
        args[0] = script
        try {
          send("eval")
        } catch (e) {
          onReply(e as Error, undefined)
        }
        return
      }
      callback(error, reply)
    }
    args[0] = sha
    try {
      send("evalsha")
    } catch (e) {
      loaded = true
      onReply(e as Error, undefined)
    }
  }

  const checkCallback: NonNullable<Store["checkCallback"]> = (client, plan, cost, callback) => {
    // EVALSHA sha 1 key cost block ...plan's prebuilt arguments
    const compiled = scripts.get(plan)
    const tail = plan.redisArgs
    const args: Array<string> = new Array(3 + tail.length)
    args[1] = "1"
    args[2] = keyOf(client)
    args[3] = cost === 1 ? "1" : String(cost)
    for (let i = 1; i < tail.length; i++) args[3 + i] = tail[i]!
    cork()
    inFlight++
    run(
      compiled.sha,
      compiled.script,
      args,
      (error, reply) => {
        inFlight--
        if (error) return callback(toError(error), undefined)
        let result: StoreResult
        try {
          result = parseReply(reply as Array<number>, plan, cost)
        } catch (e) {
          return callback(toError(e), undefined)
        }
        callback(undefined, result)
      },
      true
    )
  }

  const adjustArgs = (client: string, plan: CompiledPlan, units: number, blockMs: number): Array<string> => [
    "",
    "1",
    keyOf(client),
    String(units),
    String(blockMs),
    ...tierSpecArgs(plan)
  ]
  const adjustCall = (client: string, plan: CompiledPlan, units: number, blockMs: number) =>
    Effect.async<void, QuotaStoreError>((resume) => {
      run(ADJUST_SHA, ADJUST_SCRIPT, adjustArgs(client, plan, units, blockMs), (error) =>
        resume(error ? Effect.fail(toError(error)) : Effect.void)
      )
    })

  return {
    name,
    remote: true,
    // a cluster answers from one connection per node: one node's answers say nothing of another
    ordered: (redis as { isCluster?: boolean }).isCluster !== true,
    checkCallback,
    check: (client, plan, cost) =>
      Effect.async<StoreResult, QuotaStoreError>((resume) => {
        checkCallback(client, plan, cost, (error, result) =>
          resume(error === undefined ? Effect.succeed(result!) : Effect.fail(error))
        )
      }),
    adjust: (client, plan, units) => adjustCall(client, plan, units, 0),
    refund: (client, plan, cost) =>
      run(ADJUST_SHA, ADJUST_SCRIPT, adjustArgs(client, plan, -cost, 0), () => {}),
    block: (client, plan, durationMs) => adjustCall(client, plan, 0, durationMs),
    reset: (client) =>
      Effect.async<void, QuotaStoreError>((resume) => {
        redis.sendCommand(
          new Command("del", [keyOf(client)], commandOptions, (error) =>
            resume(error ? Effect.fail(toError(error)) : Effect.void)
          )
        )
      })
  }
}

/**
 * The Redis store on a client: loads each shape's script when it is first seen (sent before
 * that check's EVALSHA on the same connection), and all of them again after every
 * reconnection (a restarted server has an empty script cache), so checks are a single
 * EVALSHA; NOSCRIPT still recovers otherwise.
 *
 * @internal
 */
export const makeStore = (redis: Client, prefix?: string): Effect.Effect<Store, never, Scope.Scope> =>
  Effect.gen(function* () {
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
    return makeStoreFromClient(redis, prefix, scripts)
  })

import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Cluster, Redis as IORedis } from "ioredis"
import { Command } from "ioredis"
import {
  ADJUST_SCRIPT,
  ADJUST_SHA,
  adjustArgs,
  checkArgs,
  errorReason,
  keyOf,
  parseReply,
  ScriptCache
} from "@sluice/kernel/quota/RedisScript"
import type { CompiledPlan } from "../QuotaConfig.js"
import type { Store, StoreResult } from "../QuotaStore.js"
import { QuotaStoreError } from "./quotaPlan.js"

/** @internal */
export type Client = IORedis | Cluster

/**
 * At most this many checks share one socket write (with 100 checks in flight, batches of 8
 * to 32 were within noise of each other; one write per tick and batches of 64 were slower).
 */
const WRITE_BATCH = 16

const noTimer = (): void => {}

/** A failed Redis command as the store's error. @internal */
export const toStoreError = (error: unknown): QuotaStoreError => {
  const message = error instanceof Error ? error.message : String(error)
  return new QuotaStoreError({ store: "redis", reason: errorReason(message), message })
}

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
  const keyPrefix = (redis as { options?: { keyPrefix?: string } }).options?.keyPrefix
  const commandOptions =
    keyPrefix === undefined
      ? { replyEncoding: "utf8" as const }
      : { replyEncoding: "utf8" as const, keyPrefix }

  /**
   * EVALSHA, falling back to EVAL once on NOSCRIPT (restart, SCRIPT FLUSH, another node).
   * `bounded`: the caller bounds the call itself (a check: `Quota`'s deadline queue), so the
   * command skips ioredis' `commandTimeout` timer: a Node timer armed and cleared per command is
   * a noticeable share of a loopback round trip, and the deadline queue already bounds the call.
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
    const compiled = scripts.get(plan)
    cork()
    inFlight++
    run(
      compiled.sha,
      compiled.script,
      checkArgs(compiled, plan, keyOf(prefix, client), cost),
      (error, reply) => {
        inFlight--
        if (error) return callback(toStoreError(error), undefined)
        let result: StoreResult
        try {
          result = parseReply(reply as Array<number>, plan, cost)
        } catch (e) {
          return callback(toStoreError(e), undefined)
        }
        callback(undefined, result)
      },
      true
    )
  }

  /** A command as an Effect, its error as the store's. */
  const effect = (send: (callback: (error: Error | null | undefined) => void) => void) =>
    Effect.callback<void, QuotaStoreError>((resume) => {
      send((error) => resume(error ? Effect.fail(toStoreError(error)) : Effect.void))
    })
  const adjust = (client: string, plan: CompiledPlan, units: number, blockMs: number) =>
    effect((callback) =>
      run(ADJUST_SHA, ADJUST_SCRIPT, adjustArgs(plan, keyOf(prefix, client), units, blockMs), callback)
    )

  return {
    name,
    remote: true,
    // a cluster answers from one connection per node: one node's answers say nothing of another
    ordered: (redis as { isCluster?: boolean }).isCluster !== true,
    checkCallback,
    check: (client, plan, cost) =>
      Effect.callback<StoreResult, QuotaStoreError>((resume) => {
        checkCallback(client, plan, cost, (error, result) =>
          resume(error === undefined ? Effect.succeed(result!) : Effect.fail(error))
        )
      }),
    adjust: (client, plan, units) => adjust(client, plan, units, 0),
    refund: (client, plan, cost) =>
      run(ADJUST_SHA, ADJUST_SCRIPT, adjustArgs(plan, keyOf(prefix, client), -cost, 0), () => {}),
    block: (client, plan, durationMs) => adjust(client, plan, 0, durationMs),
    reset: (client) =>
      effect((callback) => {
        redis.sendCommand(new Command("del", [keyOf(prefix, client)], commandOptions, callback))
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
export const makeStore = (
  redis: Client,
  prefix?: string,
  maxBaked?: number
): Effect.Effect<Store, never, Scope.Scope> =>
  Effect.gen(function* () {
    const scripts = new ScriptCache(maxBaked)
    const load = (script: string) => {
      try {
        redis.script("LOAD", script, () => {})
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

import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Cluster, Redis as IORedis } from "ioredis"
import { Command } from "ioredis"
import { ScriptCache } from "@sluice/kernel/quota/RedisScript"
import type { Store } from "../QuotaStore.js"
import { makeStoreFromTransport, type Transport, type TransportStore } from "./redisTransportStore.js"

/** @internal */
export type Client = IORedis | Cluster

/**
 * At most this many checks share one socket write (with 100 checks in flight, batches of 8
 * to 32 were within noise of each other; one write per tick and batches of 64 were slower).
 */
const WRITE_BATCH = 16

const noTimer = (): void => {}

/** The ioredis transport: one `Command` per call, check writes corked per tick. @internal */
export const ioredisTransport = (redis: Client): Transport => {
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
  return {
    // a cluster answers from one connection per node: one node's answers say nothing of another
    ordered: (redis as { isCluster?: boolean }).isCluster !== true,
    beginCheck: () => {
      cork()
      inFlight++
    },
    endCheck: () => {
      inFlight--
    },
    send: (name, args, callback, bounded) => {
      const command = new Command(name.toLowerCase(), args, commandOptions, callback)
      // a bounded call skips ioredis' `commandTimeout` timer: a Node timer armed and cleared per
      // command is a noticeable share of a loopback round trip, and the deadline queue already
      // bounds the call
      if (bounded) command.setTimeout = noTimer
      redis.sendCommand(command)
    }
  }
}

/** Makes the Redis store from a client. One `EVALSHA` per check. @internal */
export const makeStoreFromClient = (
  redis: Client,
  now: () => number,
  prefix = "sluice:quota:",
  scripts: ScriptCache = new ScriptCache()
): TransportStore => makeStoreFromTransport(ioredisTransport(redis), now, prefix, scripts)

/**
 * The Redis store on a client: loads each shape's script when it is first seen (sent before
 * that check's EVALSHA on the same connection), and all of them again after every
 * reconnection (a restarted server has an empty script cache), so checks are a single
 * EVALSHA; NOSCRIPT still recovers otherwise. A closed connection is a disruption: the checks
 * after it carry their floors (see `makeStoreFromTransport`).
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
    const clock = yield* Clock.Clock
    const store = makeStoreFromClient(redis, () => clock.currentTimeMillisUnsafe(), prefix, scripts)
    // a connection that closed may come back to another server (restarted, or a promoted replica)
    const onClose = () => store.disrupted()
    redis.on("ready", onReady)
    redis.on("close", onClose)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        redis.off("ready", onReady)
        redis.off("close", onClose)
      })
    )
    return store
  })

import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redis from "effect/persistence/Redis"
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

// The Redis store over any transport, and the transport over Effect's `Redis` service. Nothing
// here may load `ioredis` (`@sluice/quota/Redis` imports this file): the ioredis transport
// is `ioRedisStore.ts`.

/**
 * A failed command's message (an Effect `RedisError`'s is its cause's); an error without one by
 * its class name: node-redis fails a command whose own timeout passed with an empty
 * `TimeoutError`.
 */
const messageOf = (error: unknown): string => {
  if (error instanceof Error) {
    if (error.message !== "") return error.message
    if ("cause" in error && error.cause !== undefined) return messageOf(error.cause)
    return error.name !== "Error" ? error.name : error.constructor.name
  }
  return String(error)
}

/** A failed Redis command as the store's error. @internal */
export const toStoreError = (error: unknown): QuotaStoreError => {
  const message = messageOf(error)
  return new QuotaStoreError({ store: "redis", reason: errorReason(message), message })
}

/**
 * What the store needs of a connection: a command sent with a callback (called once; it may
 * also throw synchronously), whether answers come back in call order, and optional hooks
 * around each check (ioredis batches the socket writes of checks issued in one tick).
 *
 * @internal
 */
export interface Transport {
  /** `bounded`: the caller bounds the call itself (a check: `Quota`'s deadline queue). */
  readonly send: (
    command: string,
    args: Array<string>,
    callback: (error: unknown, reply: unknown) => void,
    bounded: boolean
  ) => void
  readonly ordered: boolean
  /** see `Store.resumesPerTurn` */
  readonly resumesPerTurn?: number | undefined
  readonly beginCheck?: (() => void) | undefined
  readonly endCheck?: (() => void) | undefined
}

/** Makes the Redis store over a transport. One `EVALSHA` per check. @internal */
export const makeStoreFromTransport = (
  transport: Transport,
  prefix = "sluice:quota:",
  scripts: ScriptCache = new ScriptCache()
): Store => {
  const name = "redis"

  /** EVALSHA, falling back to EVAL once on NOSCRIPT (restart, SCRIPT FLUSH, another node). */
  const run = (
    sha: string,
    script: string,
    args: Array<string>,
    callback: (error: unknown, reply: unknown) => void,
    bounded = false
  ) => {
    let loaded = false
    const onReply = (error: unknown, reply: unknown): void => {
      if (error && !loaded && messageOf(error).startsWith("NOSCRIPT")) {
        loaded = true
        args[0] = script
        try {
          transport.send("EVAL", args, onReply, bounded)
        } catch (e) {
          onReply(e, undefined)
        }
        return
      }
      callback(error, reply)
    }
    args[0] = sha
    try {
      transport.send("EVALSHA", args, onReply, bounded)
    } catch (e) {
      loaded = true
      onReply(e, undefined)
    }
  }

  const checkCallback: NonNullable<Store["checkCallback"]> = (client, plan, cost, callback, floor) => {
    const compiled = scripts.get(plan)
    transport.beginCheck?.()
    run(
      compiled.sha,
      compiled.script,
      checkArgs(compiled, plan, keyOf(prefix, client), cost, floor),
      (error, reply) => {
        transport.endCheck?.()
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
  const effect = (send: (callback: (error: unknown) => void) => void) =>
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
    ordered: transport.ordered,
    resumesPerTurn: transport.resumesPerTurn,
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
        try {
          transport.send("DEL", [keyOf(prefix, client)], callback, false)
        } catch (e) {
          callback(e)
        }
      })
  }
}

/**
 * The transport over Effect's `Redis` service (e.g. `NodeRedis`): each call is its `send` run
 * at once in the layer's context, so SCRIPT LOAD leaves before the EVALSHA that follows it.
 * One connection answers in call order. It cannot cork a socket it does not hold: instead it
 * asks `Quota` to resume checks a few per turn (`resumesPerTurn`).
 *
 * @internal
 */
export const effectTransport = (
  redis: Redis.Redis["Service"],
  context: Context.Context<never>
): Transport => {
  const run = Effect.runCallbackWith(context)
  return {
    ordered: true,
    // node-redis writes every command of one event-loop turn in one write: with 100 checks in
    // flight they went and came back as one batch, Redis and this process taking turns on it
    // (bench:quota, twoTierNodeRedis / rate-limiter-flexible 0.57–0.62); resuming 32 checks per
    // turn spreads them over a few writes (0.86–0.96; 16: 0.83–0.92)
    resumesPerTurn: 32,
    send: (name, args, callback) => {
      run(redis.send(name, ...args), {
        onExit: (exit) =>
          Exit.isSuccess(exit)
            ? callback(undefined, exit.value)
            : callback(Cause.squash(exit.cause), undefined)
      })
    }
  }
}

/**
 * The Redis store on Effect's `Redis` service: loads each shape's script when it is first seen
 * (sent before that check's EVALSHA); after a restart of Redis, NOSCRIPT reloads it with EVAL.
 *
 * @internal
 */
export const makeStoreEffect = (
  prefix?: string,
  maxBaked?: number
): Effect.Effect<Store, never, Redis.Redis> =>
  Effect.gen(function* () {
    const redis = yield* Redis.Redis
    const transport = effectTransport(redis, yield* Effect.context<never>())
    const scripts = new ScriptCache(maxBaked)
    scripts.onNew = (script) =>
      transport.send(
        "SCRIPT",
        ["LOAD", script],
        () => {
          // a failed load: NOSCRIPT loads it with EVAL
        },
        false
      )
    return makeStoreFromTransport(transport, prefix, scripts)
  })

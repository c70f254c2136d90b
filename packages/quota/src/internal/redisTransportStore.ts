import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
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
  KNOWN_CLIENT,
  LOST,
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

/**
 * How long checks keep sending their client's whole floor after the store was disrupted (a
 * reconnection, a failed check, `NOSCRIPT`, a lost key), counted from the first answer after it:
 * a replica promoted before the last writes reached it still holds the client's key, with an
 * older state, which only the floor itself raises.
 */
const CARRY_MS = 30_000

/** The store, and the signal of a disruption (e.g. the connection closed). @internal */
export interface TransportStore extends Store {
  readonly disrupted: () => void
}

/**
 * Makes the Redis store over a transport. One `EVALSHA` per check. A check of a client this
 * instance holds a floor for sends one argument in its place (`KNOWN_CLIENT`); the floor itself
 * goes only when the script answers that the client's key was lost (a second round trip, once per
 * client after a restart), and with every check for `CARRY_MS` after a disruption. `now`: the
 * time in milliseconds (Effect's Clock).
 *
 * @internal
 */
export const makeStoreFromTransport = (
  transport: Transport,
  now: () => number,
  prefix = "sluice:quota:",
  scripts: ScriptCache = new ScriptCache()
): TransportStore => {
  const name = "redis"
  /** a disruption was seen and no answer has come since */
  let disrupted = false
  /** checks send their whole floor until then (0: not carrying) */
  let carryUntil = 0

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
    const key = keyOf(prefix, client)
    let carry = false
    if (floor !== undefined && (disrupted || carryUntil !== 0)) {
      if (disrupted || now() < carryUntil) carry = true
      else carryUntil = 0
    }
    let sentFloor = false
    /** the floor sent held something (not just asked for) */
    let carried = false
    const argsFor = (withFloor: boolean): Array<string> => {
      if (floor === undefined) return checkArgs(compiled, plan, key, cost)
      if (!withFloor) return checkArgs(compiled, plan, key, cost, KNOWN_CLIENT)
      sentFloor = true
      const numbers = floor()
      carried = numbers !== undefined
      return checkArgs(compiled, plan, key, cost, numbers)
    }
    let args = argsFor(carry)
    let loaded = false
    let resent = false
    const send = (command: string) => {
      try {
        transport.send(command, args, onReply, true)
      } catch (e) {
        loaded = true
        onReply(e, undefined)
      }
    }
    const onReply = (error: unknown, reply: unknown): void => {
      if (error) {
        // EVALSHA, sent again with EVAL once on NOSCRIPT: a restarted or failed-over Redis (or
        // SCRIPT FLUSH), which may have lost the client's state too
        if (!loaded && messageOf(error).startsWith("NOSCRIPT")) {
          loaded = true
          disrupted = true
          if (!sentFloor && floor !== undefined) args = argsFor(true)
          args[0] = compiled.script
          return send("EVAL")
        }
        disrupted = true
        transport.endCheck?.()
        return callback(toStoreError(error), undefined)
      }
      if (!resent && (reply as Array<number>)[1] === LOST) {
        // the key of a client this instance knows is gone: again, with the floor (a floor that
        // still holds something says Redis lost state: others' keys may be stale too)
        resent = true
        loaded = false
        args = argsFor(true)
        if (carried) disrupted = true
        args[0] = compiled.sha
        return send("EVALSHA")
      }
      if (disrupted) {
        disrupted = false
        carryUntil = now() + CARRY_MS
      }
      transport.endCheck?.()
      let result: StoreResult
      try {
        result = parseReply(reply as Array<number>, plan, cost)
      } catch (e) {
        return callback(toStoreError(e), undefined)
      }
      callback(undefined, result)
    }
    transport.beginCheck?.()
    args[0] = compiled.sha
    send("EVALSHA")
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
    disrupted: () => {
      disrupted = true
    },
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
    const clock = yield* Clock.Clock
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
    return makeStoreFromTransport(transport, () => clock.currentTimeMillisUnsafe(), prefix, scripts)
  })

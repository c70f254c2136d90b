import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redis from "effect/persistence/Redis"
import type * as Scope from "effect/Scope"
import type { InvalidOptions } from "@sluice/core/Options"
import * as PlanTable from "@sluice/kernel/quota/QuotaConfig"
import * as configInternal from "./quotaConfig.js"
import { toStoreError } from "./redisTransportStore.js"
import type { CompiledPlan, Plan, PlanInput } from "../QuotaConfig.js"
import { type QuotaStoreError, toSpec } from "./quotaPlan.js"
import type * as QuotaConfigNs from "../QuotaConfig.js"

// The plan store over its commands, and its commands over Effect's `Redis` service. Nothing here
// may load `ioredis` (`@sluice/quota/Redis` imports this file): the commands over ioredis
// are in `IoRedis.ts`.

/** A plan as JSON (periods in milliseconds), as the plan source stores it. @internal */
export const planToJson = (plan: Plan): string => PlanTable.toJson(toSpec(plan))

/** @internal */
export interface ConfigOptions {
  readonly key?: string | undefined
  readonly default: PlanInput | Plan
  readonly refresh?: Duration.Input | undefined
}

/** The five commands the plan source sends, their errors as the store's. @internal */
export interface PlanConnection {
  readonly hgetall: (key: string) => Effect.Effect<Record<string, string>, QuotaStoreError>
  readonly get: (key: string) => Effect.Effect<string | null, QuotaStoreError>
  readonly set: (key: string, value: string) => Effect.Effect<void, QuotaStoreError>
  readonly hset: (key: string, field: string, value: string) => Effect.Effect<void, QuotaStoreError>
  readonly hdel: (key: string, field: string) => Effect.Effect<void, QuotaStoreError>
}

/** A reply as a string, or null (nil). */
const asString = (reply: unknown): string | null =>
  reply === null || reply === undefined
    ? null
    : typeof reply === "string"
      ? reply
      : reply instanceof Uint8Array
        ? Buffer.from(reply).toString("utf8")
        : String(reply)

/**
 * The plan source's commands over Effect's `Redis` service. HGETALL answers an object of
 * fields (node-redis), or a flat list of fields and values, or a map, as other clients may.
 *
 * @internal
 */
export const effectConnection = (redis: Redis.Redis["Service"]): PlanConnection => {
  const send = (command: string, ...args: Array<string>) =>
    Effect.mapError(redis.send<unknown>(command, ...args), toStoreError)
  return {
    hgetall: (key) =>
      Effect.map(send("HGETALL", key), (reply) => {
        const hash: Record<string, string> = {}
        if (Array.isArray(reply)) {
          for (let i = 0; i + 1 < reply.length; i += 2) hash[asString(reply[i])!] = asString(reply[i + 1])!
        } else if (reply instanceof Map) {
          for (const [field, value] of reply) hash[asString(field)!] = asString(value)!
        } else if (typeof reply === "object" && reply !== null) {
          for (const [field, value] of Object.entries(reply)) hash[field] = asString(value)!
        }
        return hash
      }),
    get: (key) => Effect.map(send("GET", key), asString),
    set: (key, value) => Effect.asVoid(send("SET", key, value)),
    hset: (key, field, value) => Effect.asVoid(send("HSET", key, field, value)),
    hdel: (key, field) => Effect.asVoid(send("HDEL", key, field))
  }
}

/** The plan source on Effect's `Redis` service. @internal */
export const makeConfigEffect = (
  options: ConfigOptions
): Effect.Effect<
  QuotaConfigNs.Service<QuotaStoreError> & { readonly refresh: Effect.Effect<void, QuotaStoreError> },
  InvalidOptions,
  Redis.Redis | Scope.Scope
> => Effect.flatMap(Redis.Redis, (redis) => makeConfigOn(effectConnection(redis), options))

/** The plan source over its commands. @internal */
export const makeConfigOn = (
  redis: PlanConnection,
  options: ConfigOptions
): Effect.Effect<
  QuotaConfigNs.Service<QuotaStoreError> & { readonly refresh: Effect.Effect<void, QuotaStoreError> },
  InvalidOptions,
  Scope.Scope
> =>
  Effect.gen(function* () {
    const key = options.key ?? "sluice:quota:plans"
    // a key of its own: any field of the hash could be a client's id
    const defaultKey = `${key}:default`
    const table = yield* configInternal.makeTable({ default: options.default })
    // a stored plan that does not decode is logged, and the plan in force stays (undefined)
    const stored = (json: string, label: string, what: string): Effect.Effect<CompiledPlan | undefined> =>
      configInternal
        .decodePlan(PlanTable.fromStored(json), label)
        .pipe(
          Effect.catch((e) =>
            Effect.as(Effect.logWarning(`${e.message}\n(the previous ${what} stays in force)`), undefined)
          )
        )
    // two commands, not a pipeline: in a cluster the two keys may live on different nodes
    const refresh: Effect.Effect<void, QuotaStoreError> = Effect.all(
      [redis.hgetall(key), redis.get(defaultKey)],
      { concurrency: 2 }
    ).pipe(
      Effect.flatMap(([hash, storedDefault]) =>
        Effect.gen(function* () {
          const defaultPlan =
            storedDefault === null ? null : yield* stored(storedDefault, `default (${defaultKey})`, "default")
          const overrides = yield* Effect.forEach(Object.entries(hash), ([client, json]) =>
            Effect.map(
              stored(json, configInternal.clientLabel(client), "plan"),
              (plan) => [client, plan] as const
            )
          )
          table.refresh(defaultPlan, overrides)
        })
      )
    )
    // one warning per outage, not one per refresh: a Redis down for an hour at the default
    // refresh would otherwise log 720 identical lines; its end is logged once too
    let unreadable = false
    const refreshLogged = refresh.pipe(
      Effect.matchEffect({
        onFailure: (e) => {
          if (unreadable) return Effect.void
          unreadable = true
          return Effect.logWarning(
            `QuotaConfig: cannot read plans from Redis: ${e.message} (the plans in force stay; logged once until Redis answers again)`
          )
        },
        onSuccess: () => {
          if (!unreadable) return Effect.void
          unreadable = false
          return Effect.logInfo("QuotaConfig: plans read from Redis again")
        }
      })
    )
    yield* refreshLogged
    yield* Effect.sleep(options.refresh ?? Duration.seconds(5)).pipe(
      Effect.andThen(refreshLogged),
      Effect.forever,
      Effect.forkScoped
    )
    const service = configInternal.serviceFromTable<QuotaStoreError>(table, {
      onSetDefault: (plan) => redis.set(defaultKey, planToJson(plan.plan)),
      onSet: (client, plan) => redis.hset(key, client, planToJson(plan.plan)),
      onRemove: (client) => redis.hdel(key, client)
    })
    return { ...service, refresh }
  })

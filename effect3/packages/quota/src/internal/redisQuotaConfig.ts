import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { InvalidOptions } from "@sluice/core/Options"
import { RedisClient } from "@sluice/core/RedisClient"
import * as PlanTable from "@sluice/kernel/quota/QuotaConfig"
import * as configInternal from "./quotaConfig.js"
import { toStoreError } from "./redisQuotaStore.js"
import type { CompiledPlan, Plan, PlanInput } from "../QuotaConfig.js"
import { type QuotaStoreError, toSpec } from "./quotaPlan.js"
import type * as QuotaConfigNs from "../QuotaConfig.js"

/** A plan as JSON (periods in milliseconds), as the plan source stores it. @internal */
export const planToJson = (plan: Plan): string => PlanTable.toJson(toSpec(plan))

/** @internal */
export interface ConfigOptions {
  readonly key?: string | undefined
  readonly default: PlanInput | Plan
  readonly refresh?: Duration.DurationInput | undefined
}

/** The plan source on the shared client. @internal */
export const makeConfig = (
  options: ConfigOptions
): Effect.Effect<
  QuotaConfigNs.Service<QuotaStoreError> & { readonly refresh: Effect.Effect<void, QuotaStoreError> },
  InvalidOptions,
  RedisClient | Scope.Scope
> =>
  Effect.gen(function* () {
    const redis = (yield* RedisClient).client
    const key = options.key ?? "sluice:quota:plans"
    // a key of its own: any field of the hash could be a client's id
    const defaultKey = `${key}:default`
    const table = yield* configInternal.makeTable({ default: options.default })
    // a stored plan that does not decode is logged, and the plan in force stays (undefined)
    const stored = (json: string, label: string, what: string): Effect.Effect<CompiledPlan | undefined> =>
      configInternal
        .decodePlan(PlanTable.fromStored(json), label)
        .pipe(
          Effect.catchAll((e) =>
            Effect.as(Effect.logWarning(`${e.message}\n(the previous ${what} stays in force)`), undefined)
          )
        )
    const refresh: Effect.Effect<void, QuotaStoreError> = Effect.tryPromise({
      // two commands, not a pipeline: in a cluster the two keys may live on different nodes
      try: () => Promise.all([redis.hgetall(key), redis.get(defaultKey)]),
      catch: toStoreError
    }).pipe(
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
    const refreshLogged = refresh.pipe(
      Effect.catchAll((e) => Effect.logWarning(`QuotaConfig: cannot read plans from Redis: ${e.message}`))
    )
    yield* refreshLogged
    yield* Effect.sleep(options.refresh ?? Duration.seconds(5)).pipe(
      Effect.zipRight(refreshLogged),
      Effect.forever,
      Effect.forkScoped
    )
    const write = (command: () => Promise<unknown>): Effect.Effect<void, QuotaStoreError> =>
      Effect.asVoid(Effect.tryPromise({ try: command, catch: toStoreError }))
    const service = configInternal.serviceFromTable<QuotaStoreError>(table, {
      onSetDefault: (plan) => write(() => redis.set(defaultKey, planToJson(plan.plan))),
      onSet: (client, plan) => write(() => redis.hset(key, client, planToJson(plan.plan))),
      onRemove: (client) => write(() => redis.hdel(key, client))
    })
    return { ...service, refresh }
  })

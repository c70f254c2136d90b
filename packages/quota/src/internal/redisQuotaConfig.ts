import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Scope from "effect/Scope"
import type { InvalidOptions } from "@sluice/core/Options"
import { RedisClient } from "@sluice/core/RedisClient"
import * as configInternal from "./quotaConfig.js"
import { errorReason } from "./redisQuotaStore.js"
import type { CompiledPlan, Plan, PlanInput } from "../QuotaConfig.js"
import { QuotaStoreError } from "./quotaPlan.js"
import type * as QuotaConfigNs from "../QuotaConfig.js"

/** A plan as JSON (periods in milliseconds), as the plan source stores it. @internal */
export const planToJson = (plan: Plan): string =>
  JSON.stringify({
    tiers: plan.tiers.map((tier) => ({
      name: tier.name,
      algorithm: tier.algorithm,
      limit: tier.limit,
      period: Duration.toMillis(tier.period),
      ...(tier.burst === undefined ? {} : { burst: tier.burst })
    })),
    ...(plan.blockFor === undefined ? {} : { blockFor: Duration.toMillis(plan.blockFor) })
  })

/** @internal */
export interface ConfigOptions {
  readonly key?: string | undefined
  readonly default: PlanInput | Plan
  readonly refresh?: Duration.DurationInput | undefined
}

const redisError = (error: unknown) => {
  const e = error instanceof Error ? error : new Error(String(error))
  return new QuotaStoreError({ store: "redis", reason: errorReason(e), message: e.message })
}

/** A stored plan: JSON, or (not JSON) the string itself, for the decoder to name what is wrong. */
const parseJson = (json: string): unknown => {
  try {
    return JSON.parse(json)
  } catch {
    return json
  }
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
    const configured = table.defaultCompiled
    const refresh: Effect.Effect<void, QuotaStoreError> = Effect.tryPromise({
      // two commands, not a pipeline: in a cluster the two keys may live on different nodes
      try: () => Promise.all([redis.hgetall(key), redis.get(defaultKey)]),
      catch: redisError
    }).pipe(
      Effect.flatMap(([hash, storedDefault]) =>
        Effect.gen(function* () {
          if (storedDefault === null) table.defaultCompiled = configured
          else {
            const decoded = configInternal.decodePlan(parseJson(storedDefault), `default (${defaultKey})`)
            if (Either.isRight(decoded)) table.defaultCompiled = decoded.right
            else yield* Effect.logWarning(`${decoded.left.message}\n(the previous default stays in force)`)
          }
          const next = new Map<string, CompiledPlan>()
          for (const [clientId, json] of Object.entries(hash)) {
            const decoded = configInternal.decodePlan(parseJson(json), `client ${JSON.stringify(clientId)}`)
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
    const write = (command: () => Promise<unknown>): Effect.Effect<void, QuotaStoreError> =>
      Effect.asVoid(Effect.tryPromise({ try: command, catch: redisError }))
    const service = configInternal.serviceFromTable<QuotaStoreError>(table, {
      onSetDefault: (plan) => write(() => redis.set(defaultKey, planToJson(plan.plan))),
      onSet: (clientId, plan) => write(() => redis.hset(key, clientId, planToJson(plan.plan))),
      onRemove: (clientId) => write(() => redis.hdel(key, clientId))
    })
    return { ...service, refresh }
  })

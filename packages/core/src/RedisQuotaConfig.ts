/**
 * Quota plans in Redis: a {@link QuotaConfig} whose per-client overrides live in a Redis hash
 * and whose default, once set, in a key beside it, so every instance sees the same plans. The
 * client comes from {@link RedisClient}.
 *
 * @since 0.2.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as configInternal from "./internal/quotaConfig.js"
import { errorReason } from "./internal/redisQuotaStore.js"
import type { CompiledPlan, Plan, PlanInput } from "./QuotaConfig.js"
import { QuotaStoreError } from "./QuotaStore.js"
import type { InvalidOptions } from "./Options.js"
import { QuotaConfig } from "./QuotaConfig.js"
import type * as QuotaConfigNs from "./QuotaConfig.js"
import { RedisClient } from "./RedisClient.js"

/**
 * A plan as JSON (periods in milliseconds), as the config source stores it.
 *
 * @since 0.1.0
 * @category encoding
 */
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

/**
 * Options of the Redis plan source: a hash `key` (default `sluice:quota:plans`)
 * mapping client → plan JSON, the default plan, and how often to refresh the
 * local cache (default 5 seconds). `default` is the default plan until one is stored
 * in Redis (`setDefault` stores it at `${key}:default`, as JSON).
 *
 * @since 0.1.0
 * @category models
 */
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

/**
 * A {@link QuotaConfig} whose plans live in Redis, so every instance sees the same
 * plans: the overrides in a hash at `key`, and the default, once `setDefault` has
 * stored one, at `${key}:default` (until then, and whenever that key is deleted, each
 * instance uses its `default` option). Reads are served from a local cache refreshed in
 * the background; a plan in Redis that does not decode is logged (naming the field)
 * and the previous plan stays. `setPlan`, `removePlan` and `setDefault` validate,
 * write Redis, and take effect here at once and on every other instance at its next
 * refresh; when Redis cannot be written they fail with `QuotaStoreError` (`reason`
 * `"unavailable"`, `"timeout"` or `"error"`) and take effect nowhere.
 *
 * @example
 * ```ts
 * import * as RedisClient from "@sluice/core/RedisClient"
 * import * as RedisQuotaConfig from "@sluice/core/RedisQuotaConfig"
 * import { Layer } from "effect"
 *
 * const ConfigLive = RedisQuotaConfig.layerPlanStore({
 *   key: "sluice:quota:plans",
 *   refresh: "5 seconds",
 *   default: { tiers: [{ name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 }] }
 * }).pipe(Layer.provide(RedisClient.layer()))
 * ```
 * @since 0.1.0
 * @category constructors
 */
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

/**
 * The Redis plan source as a layer: a `QuotaConfig` whose plans are stored in Redis.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerPlanStore = (
  options: ConfigOptions
): Layer.Layer<QuotaConfig, InvalidOptions, RedisClient> => Layer.scoped(QuotaConfig, makeConfig(options))

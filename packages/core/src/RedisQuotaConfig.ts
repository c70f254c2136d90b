/**
 * Quota plans in Redis: a {@link QuotaConfig} whose per-client overrides live in a Redis hash,
 * so every instance sees the same plans. The client comes from {@link RedisClient}.
 *
 * @since 0.2.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as configInternal from "./internal/quotaConfig.js"
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
 * local cache (default 5 seconds).
 *
 * @since 0.1.0
 * @category models
 */
export interface ConfigOptions {
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
  QuotaConfigNs.Service & { readonly refresh: Effect.Effect<void, QuotaStoreError> },
  InvalidOptions,
  RedisClient | Scope.Scope
> =>
  Effect.gen(function* () {
    const redis = (yield* RedisClient).client
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
 * The Redis plan source as a layer: a `QuotaConfig` whose plans are stored in Redis.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerPlanStore = (
  options: ConfigOptions
): Layer.Layer<QuotaConfig, InvalidOptions, RedisClient> => Layer.scoped(QuotaConfig, makeConfig(options))

/**
 * @deprecated since 0.2.0: use {@link layerPlanStore} (`layerConfig` names layers whose
 * options are read from Effect `Config`).
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: (options: ConfigOptions) => Layer.Layer<QuotaConfig, InvalidOptions, RedisClient> =
  layerPlanStore

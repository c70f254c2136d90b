/**
 * @sluice/quota: tiered per-client quotas — the service, its plans and the memory store.
 * The Redis store and plan store are the subpath `@sluice/quota/Redis` (over Effect's own
 * `Redis` service, e.g. `NodeRedis`), or `@sluice/quota/IoRedis` (over ioredis), so
 * this index never loads `ioredis`.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Quota from "./Quota.js"
/** @since 0.1.0 */
export * as QuotaConfig from "./QuotaConfig.js"
/** @since 0.1.0 */
export * as QuotaStore from "./QuotaStore.js"

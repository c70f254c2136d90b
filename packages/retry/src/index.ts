/**
 * @sluice/retry: backoff schedules, the one-layer retry policy, per-client retry
 * budgets and the server-side retry histogram.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Backoff from "./Backoff.js"

/**
 * @since 1.0.0
 */
export * as Fallback from "./Fallback.js"
/** @since 1.1.0 */
export * as Hedge from "./Hedge.js"
/** @since 0.1.0 */
export * as Retry from "./Retry.js"
/** @since 0.1.0 */
export * as RetryBudget from "./RetryBudget.js"
/** @since 0.1.0 */
export * as RetryHistogram from "./RetryHistogram.js"

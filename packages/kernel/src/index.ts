/**
 * Sluice's rules without a runtime. Every module is plain TypeScript: time comes in as a
 * parameter (`now`, epoch milliseconds), randomness as a `() => number` in [0, 1), and a
 * failure is a value. The Effect packages (`@sluice/core`, `@sluice/retry`, `@sluice/adaptive`,
 * `@sluice/http`) bind these rules to Effect's Clock, Random, Metrics and errors.
 *
 * Modules live by area (`stats/`, `limit/`, `retry/`, `wire/`, `quota/`, …), one rule per file;
 * import them as `@sluice/kernel/<area>/<Rule>` or through the namespaces below.
 *
 * @since 0.2.0
 */

/** @since 0.2.0 */
export * as Ratio from "./stats/Ratio.js"

/** @since 0.2.0 */
export * as RollingCounter from "./stats/RollingCounter.js"

/** @since 0.2.0 */
export * as Ewma from "./stats/Ewma.js"

/** @since 0.2.0 */
export * as LatencyWindow from "./stats/LatencyWindow.js"

/** @since 0.2.0 */
export * as BoundedMap from "./stats/BoundedMap.js"

/** @since 0.2.0 */
export * as AimdInterval from "./interval/AimdInterval.js"

/** @since 0.2.0 */
export * as ProportionalSampler from "./sample/ProportionalSampler.js"

/** @since 0.2.0 */
export * as LoadShedder from "./shed/LoadShedder.js"

/** @since 0.2.0 */
export * as AdaptiveThrottle from "./throttle/AdaptiveThrottle.js"

/** @since 0.2.0 */
export * as ThresholdMonitor from "./monitor/ThresholdMonitor.js"

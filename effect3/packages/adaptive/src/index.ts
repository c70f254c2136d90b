/**
 * @sluice/adaptive: concurrency limits and the control loops that slow a system
 * down before it falls over.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as AdaptiveThrottle from "./AdaptiveThrottle.js"
/** @since 0.1.0 */
export * as AimdLimit from "./limit/AimdLimit.js"
/** @since 0.1.0 */
export * as ConcurrencyLimiter from "./ConcurrencyLimiter.js"
/** @since 0.1.0 */
export * as CongestionWindow from "./limit/CongestionWindow.js"
/** @since 0.1.0 */
export * as LimitAlgorithm from "./limit/LimitAlgorithm.js"
/** @since 0.1.0 */
export * as LoadShedder from "./LoadShedder.js"
/** @since 0.1.0 */
export * as AimdInterval from "./AimdInterval.js"
/** @since 0.1.0 */
export * as ThresholdMonitor from "./ThresholdMonitor.js"
/** @since 0.1.0 */
export * as ProportionalSampler from "./ProportionalSampler.js"
/** @since 0.1.0 */
export * as QpsSensor from "./QpsSensor.js"
/** @since 0.1.0 */
export * as VegasLimit from "./limit/VegasLimit.js"
/** @since 0.1.0 */
export * as Pacer from "./Pacer.js"
/** @since 0.2.0 */
export * as TempoLimit from "./limit/TempoLimit.js"

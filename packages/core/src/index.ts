/**
 * @sluice/core: the error algebra, criticality, clock-driven window statistics,
 * the circuit breaker and tiered quotas.
 *
 * @since 0.1.0
 */

/** @since 0.2.0 */
export * as Admission from "./Admission.js"
/** @since 0.2.0 */
export * as BoundedMap from "./BoundedMap.js"
/** @since 0.1.0 */
export * as CircuitBreaker from "./CircuitBreaker.js"
/** @since 0.1.0 */
export * as Criticality from "./Criticality.js"
/** @since 0.1.0 */
export * as Errors from "./Errors.js"
/** @since 0.1.0 */
export * as Ewma from "./Ewma.js"
/** @since 0.1.0 */
export * as LatencyWindow from "./LatencyWindow.js"
/** @since 0.1.0 */
export * as Options from "./Options.js"
/** @since 0.2.0 */
export * as Outcome from "./Outcome.js"
/** @since 0.1.0 */
export * as Quota from "./Quota.js"
/** @since 0.1.0 */
export * as QuotaConfig from "./QuotaConfig.js"
/** @since 0.1.0 */
export * as QuotaStore from "./QuotaStore.js"
/** @since 0.1.0 */
export * as RollingCounter from "./RollingCounter.js"
/** @since 0.2.0 */
export * as Ratio from "./Ratio.js"

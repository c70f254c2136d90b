/**
 * @sluice/core: the error algebra, outcomes and the admission protocol, criticality,
 * clock-driven window statistics and the circuit breaker. Tiered quotas are `@sluice/quota`.
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
/** @since 1.0.0 */
export * as EventHub from "./EventHub.js"
/** @since 0.1.0 */
export * as Ewma from "./Ewma.js"
/** @since 0.1.0 */
export * as LatencyWindow from "./LatencyWindow.js"
/** @since 1.0.0 */
export * as Meters from "./Meters.js"
/** @since 0.1.0 */
export * as Options from "./Options.js"
/** @since 0.2.0 */
export * as Outcome from "./Outcome.js"
/** @since 1.1.0 */
export * as ServerLoad from "./ServerLoad.js"
/** @since 0.1.0 */
export * as RollingCounter from "./RollingCounter.js"
/** @since 0.2.0 */
export * as Ratio from "./Ratio.js"

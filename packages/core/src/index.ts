/**
 * @sluice/core: the error algebra, outcomes and the admission protocol, criticality
 * and the circuit breaker (window statistics are the kernel's `@sluice/kernel/stats/*`). Tiered quotas are `@sluice/quota`.
 *
 * @since 0.1.0
 */

/** @since 0.2.0 */
export * as Admission from "./Admission.js"
/** @since 0.1.0 */
export * as CircuitBreaker from "./CircuitBreaker.js"
/** @since 0.1.0 */
export * as Criticality from "./Criticality.js"
/** @since 0.1.0 */
export * as Errors from "./Errors.js"
/** @since 0.1.0 */
export * as Options from "./Options.js"
/** @since 0.2.0 */
export * as Outcome from "./Outcome.js"
/** @since 1.1.0 */
export * as ServerLoad from "./ServerLoad.js"

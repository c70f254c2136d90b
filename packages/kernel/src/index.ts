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
export * as Utf8 from "./hash/Utf8.js"
/** @since 0.2.0 */
export * as MerkleDamgard from "./hash/MerkleDamgard.js"
/** @since 0.2.0 */
export * as Sha1 from "./hash/Sha1.js"
/** @since 0.2.0 */
export * as Sha256 from "./hash/Sha256.js"
/** @since 0.2.0 */
export * as QuotaPlan from "./quota/QuotaPlan.js"
/** @since 0.2.0 */
export * as QuotaDecision from "./quota/QuotaDecision.js"
/** @since 0.2.0 */
export * as ClientKey from "./quota/ClientKey.js"
/** @since 0.2.0 */
export * as MemoryStore from "./quota/MemoryStore.js"
/** @since 0.2.0 */
export * as RedisScript from "./quota/RedisScript.js"
/** @since 0.2.0 */
export * as Deadlines from "./quota/Deadlines.js"
/** @since 0.2.0 */
export * as QuotaOptions from "./quota/QuotaOptions.js"
/** @since 0.2.0 */
export * as QuotaConfig from "./quota/QuotaConfig.js"
/** @since 0.2.0 */
export * as SustainedFailure from "./quota/SustainedFailure.js"
/** @since 0.2.0 */
export * as QuotaFallback from "./quota/QuotaFallback.js"
/** @since 0.2.0 */
export * as Field from "./options/Field.js"
/** @since 0.2.0 */
/** @since 0.2.0 */
export * as Limit from "./limit/Limit.js"
/** @since 0.2.0 */
export * as Fixed from "./limit/Fixed.js"
/** @since 0.2.0 */
export * as CongestionWindow from "./limit/CongestionWindow.js"
/** @since 0.2.0 */
export * as AimdLimit from "./limit/AimdLimit.js"
/** @since 0.2.0 */
export * as VegasLimit from "./limit/VegasLimit.js"
/** @since 0.2.0 */
export * as TempoLimit from "./limit/TempoLimit.js"
/** @since 0.2.0 */
export * as Pacer from "./limit/Pacer.js"

/** @since 0.2.0 */
export * as Backoff from "./retry/Backoff.js"

/** @since 0.2.0 */
export * as RetryBudget from "./retry/RetryBudget.js"

/** @since 0.2.0 */
export * as RetryHistogram from "./retry/RetryHistogram.js"

/** @since 0.2.0 */
export * as Retry from "./retry/Retry.js"

/** @since 0.2.0 */
export * as ErrorBody from "./wire/ErrorBody.js"

/** @since 0.2.0 */
export * as Headers from "./wire/Headers.js"

/** @since 0.2.0 */
export * as HttpDate from "./wire/HttpDate.js"

/** @since 0.2.0 */
export * as RateLimit from "./wire/RateLimit.js"

/** @since 0.2.0 */
export * as RetryAfter from "./wire/RetryAfter.js"

/** @since 0.2.0 */
export * as Verdict from "./wire/Verdict.js"

/** @since 0.2.0 */
export * as ErrorResponse from "./wire/ErrorResponse.js"

/** @since 0.2.0 */
export * as QuotaHeaders from "./wire/QuotaHeaders.js"

/** @since 0.2.0 */
export * as Trust from "./wire/Trust.js"

/** @since 0.2.0 */
export * as Outgoing from "./wire/Outgoing.js"

/** @since 0.2.0 */
export * as AttemptBound from "./deadline/AttemptBound.js"
/** @since 1.0.0 */
export * as Propagation from "./deadline/Propagation.js"
/** @since 1.0.0 */
export * as Fallback from "./fallback/Fallback.js"

/** @since 0.2.0 */
export * as Stall from "./deadline/Stall.js"

/** @since 0.2.0 */
export * as CircuitBreaker from "./breaker/CircuitBreaker.js"

/** @since 0.2.0 */
export * as Outcome from "./outcome/Outcome.js"

/** @since 0.2.0 */
export * as Criticality from "./criticality/Criticality.js"

/** @since 0.2.0 */
export * as AimdInterval from "./interval/AimdInterval.js"

/** @since 0.2.0 */
export * as ProportionalSampler from "./sample/ProportionalSampler.js"

/** @since 0.2.0 */
export * as QpsSensor from "./sample/QpsSensor.js"

/** @since 0.2.0 */
export * as LoadShedder from "./shed/LoadShedder.js"

/** @since 0.2.0 */
export * as AdaptiveThrottle from "./throttle/AdaptiveThrottle.js"

/** @since 0.2.0 */
export * as ThresholdMonitor from "./monitor/ThresholdMonitor.js"
/** @since 0.2.0 */
export * as Limiter from "./limiter/Limiter.js"

import * as Cause from "effect/Cause"
import * as Predicate from "effect/Predicate"

/** @internal */
export const RetryableTypeId: unique symbol = Symbol.for("@sluice/core/Retryable") as any

/** @internal */
export const isMarkedRetryable = (u: unknown): boolean =>
  Predicate.hasProperty(u, RetryableTypeId) && (u as any)[RetryableTypeId] === true

/** @internal */
export const isRetryable = (u: unknown): boolean =>
  Predicate.isTagged(u, "Overloaded") ||
  Predicate.isTagged(u, "QuotaExceeded") ||
  Cause.isTimeoutException(u) ||
  isMarkedRetryable(u)

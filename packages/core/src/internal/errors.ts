import * as Cause from "effect/Cause"
import * as Predicate from "effect/Predicate"

/** @internal */
export const RetryableTypeId: unique symbol = Symbol.for("@sluice/core/Retryable") as any

/** @internal */
export const isMarkedRetryable = (u: unknown): boolean =>
  Predicate.hasProperty(u, RetryableTypeId) && (u as any)[RetryableTypeId] === true

/** A member of `Errors.Retryable` by its type, wherever it came from. @internal */
export const isRetryableType = (u: unknown): boolean =>
  Predicate.isTagged(u, "Overloaded") ||
  Predicate.isTagged(u, "QuotaExceeded") ||
  Cause.isTimeoutException(u) ||
  isMarkedRetryable(u)

/** @internal */
export const isLocal = (u: unknown): boolean =>
  Predicate.hasProperty(u, "origin") && (u as { readonly origin: unknown }).origin === "local"

/** Retryable by the layer above: a retryable type that this process did not refuse itself. @internal */
export const isRetryable = (u: unknown): boolean => isRetryableType(u) && !isLocal(u)

import * as Cause from "effect/Cause"
import * as Predicate from "effect/Predicate"
import * as Outcome from "@sluice/kernel/outcome/Outcome"

/** @internal */
export const RetryableTypeId: unique symbol = Symbol.for("@sluice/core/Retryable") as any

/** @internal */
export const isMarkedRetryable = (u: unknown): boolean =>
  Predicate.hasProperty(u, RetryableTypeId) && (u as any)[RetryableTypeId] === true

/** Retryable by the layer above: a retryable type that this process did not refuse itself. @internal */
export const isRetryable = (u: unknown): boolean =>
  Outcome.isRetryableError(u, Cause.isTimeoutError(u) || isMarkedRetryable(u))

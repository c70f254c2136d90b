import * as Kernel from "@sluice/kernel/outcome/Outcome"
import type * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import type * as Exit from "effect/Exit"
import type { CircuitBreaker } from "effect/persistence"
import * as Predicate from "effect/Predicate"
import { RetryableTypeId } from "../Errors.js"

/** @internal */
export const ofError: (error: unknown, options?: Kernel.ClassifyOptions) => Kernel.Outcome = Kernel.ofError

/** @internal the first failure or defect of a cause decides; nothing but interruptions: the caller gave up */
export const ofCause = (cause: Cause.Cause<unknown>, options?: Kernel.ClassifyOptions): Kernel.Outcome => {
  for (const reason of cause.reasons) {
    if (reason._tag === "Fail") return Kernel.ofError(reason.error, options)
    if (reason._tag === "Die") return Kernel.ofDefect(reason.defect, options)
  }
  return Kernel.interrupted
}

/** @internal */
export const ofExit = (
  exit: Exit.Exit<unknown, unknown>,
  options?: Kernel.ClassifyOptions
): Kernel.Outcome => (exit._tag === "Success" ? "success" : ofCause(exit.cause, options))

/** @internal */
export const isRetryable = (outcome: Kernel.Outcome, error: unknown): boolean =>
  Kernel.isRetryable(
    outcome,
    Predicate.hasProperty(error, RetryableTypeId) && error[RetryableTypeId] === true
  )

const success: CircuitBreaker.Outcome = { _tag: "Success" }
const ignored: CircuitBreaker.Outcome = { _tag: "Ignored" }

/** @internal a backend's `Retry-After` hint, also under the `DontRetry` that gave up on it */
const retryAfterOf = (error: unknown): Duration.Duration | undefined => {
  for (
    let current = error, depth = 0;
    depth < 4 && typeof current === "object" && current !== null;
    depth++
  ) {
    const node = current as { readonly retryAfter?: unknown; readonly cause?: unknown }
    if (Duration.isDuration(node.retryAfter)) return node.retryAfter
    current = node.cause
  }
  return undefined
}

/** @internal Sluice's outcome as Effect's breaker counts it: dropped and failed are failures */
export const circuitBreakerClassifier = <A, E>(
  exit: Exit.Exit<A, E>,
  options?: Kernel.ClassifyOptions
): CircuitBreaker.Outcome => {
  if (exit._tag === "Success") return success
  let first: Kernel.Reason | undefined
  for (const reason of exit.cause.reasons) {
    if (reason._tag === "Fail" || reason._tag === "Die") {
      first = reason
      break
    }
  }
  switch (Kernel.ofFirst(first, options)) {
    case "success":
      return success
    case "refused":
    case "ignored":
      return ignored
    case "dropped":
    case "failed":
      return {
        _tag: "Failure",
        retryAfter: first?._tag === "Fail" ? retryAfterOf(first.error) : undefined
      }
  }
}

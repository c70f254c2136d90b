import type * as Cause from "effect/Cause"
import type * as Exit from "effect/Exit"
import * as errors from "./errors.js"

/** @internal */
export type Outcome = "success" | "dropped" | "refused" | "ignored" | "failed"

/** @internal */
export interface ClassifyOptions {
  readonly isDrop?: ((error: unknown) => boolean) | undefined
}

const tagOf = (u: unknown): unknown =>
  typeof u === "object" && u !== null ? (u as { readonly _tag?: unknown })._tag : undefined

/** A response status that says something about load: 408, 429 and 5xx. */
const statusOf = (u: object): number | undefined => {
  const response = (u as { readonly response?: { readonly status?: unknown } }).response
  const status = response?.status
  return typeof status === "number" ? status : undefined
}

/** @internal */
export const ofError = (error: unknown, options?: ClassifyOptions): Outcome => {
  if (options?.isDrop !== undefined && options.isDrop(error)) return "dropped"
  switch (tagOf(error)) {
    case "Overloaded":
      return (error as { readonly origin?: unknown }).origin === "local" ? "refused" : "dropped"
    case "QuotaExceeded":
      return (error as { readonly origin?: unknown }).origin === "local" ? "refused" : "dropped"
    case "Throttled":
    case "CircuitOpen":
      return "refused"
    case "DontRetry": {
      // A lower layer gave up: what it gave up on says what happened (a backend that kept
      // dropping the work, or a local refusal it passed on).
      const cause = (error as { readonly cause?: unknown }).cause
      return cause === undefined ? "failed" : ofError(cause, options)
    }
    case "TimeoutException":
      return "dropped"
    case "ResponseError": {
      // A 4xx other than 408/429 is about the request, not the backend's load.
      const status = statusOf(error as object)
      if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429) {
        return "ignored"
      }
      return "failed"
    }
  }
  return "failed"
}

/** @internal */
export const ofCause = (cause: Cause.Cause<unknown>, options?: ClassifyOptions): Outcome => {
  // Walk the cause once: the first failure decides; a defect is a failure; a cause with
  // nothing but interruptions means the caller gave up, which says nothing about the backend.
  let found: Outcome | undefined
  let stack: Array<Cause.Cause<unknown>> | undefined
  let current: Cause.Cause<unknown> | undefined = cause
  while (current !== undefined && found === undefined) {
    switch (current._tag) {
      case "Fail":
        found = ofError(current.error, options)
        break
      case "Die":
        found = options?.isDrop !== undefined && options.isDrop(current.defect) ? "dropped" : "failed"
        break
      case "Sequential":
      case "Parallel":
        ;(stack ??= []).push(current.right)
        current = current.left
        continue
    }
    current = stack?.pop()
  }
  return found ?? "ignored"
}

/** @internal */
export const ofExit = (exit: Exit.Exit<unknown, unknown>, options?: ClassifyOptions): Outcome =>
  exit._tag === "Success" ? "success" : ofCause(exit.cause, options)

/** @internal */
export const isRetryable = (outcome: Outcome, error: unknown): boolean =>
  outcome === "dropped" || (outcome === "failed" && errors.isMarkedRetryable(error))

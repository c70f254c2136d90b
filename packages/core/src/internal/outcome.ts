import * as Kernel from "@sluice/kernel/outcome/Outcome"
import type * as Cause from "effect/Cause"
import type * as Exit from "effect/Exit"
import * as errors from "./errors.js"

/** @internal */
export type Outcome = Kernel.Outcome

/** @internal */
export type ClassifyOptions = Kernel.ClassifyOptions

/** @internal */
export const ofError: (error: unknown, options?: ClassifyOptions) => Outcome = Kernel.ofError

/** @internal */
export const ofCause = (cause: Cause.Cause<unknown>, options?: ClassifyOptions): Outcome => {
  // Walk the cause once: the first failure or defect decides; a cause with nothing but
  // interruptions is the caller giving up.
  let found: Outcome | undefined
  let stack: Array<Cause.Cause<unknown>> | undefined
  let current: Cause.Cause<unknown> | undefined = cause
  while (current !== undefined && found === undefined) {
    switch (current._tag) {
      case "Fail":
        found = Kernel.ofError(current.error, options)
        break
      case "Die":
        found = Kernel.ofDefect(current.defect, options)
        break
      case "Sequential":
      case "Parallel":
        ;(stack ??= []).push(current.right)
        current = current.left
        continue
    }
    current = stack?.pop()
  }
  return found ?? Kernel.interrupted
}

/** @internal */
export const ofExit = (exit: Exit.Exit<unknown, unknown>, options?: ClassifyOptions): Outcome =>
  exit._tag === "Success" ? "success" : ofCause(exit.cause, options)

/** @internal */
export const isRetryable = (outcome: Outcome, error: unknown): boolean =>
  Kernel.isRetryable(outcome, errors.isMarkedRetryable(error))

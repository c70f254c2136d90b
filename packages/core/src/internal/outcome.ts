import * as Kernel from "@sluice/kernel/outcome/Outcome"
import type * as Cause from "effect/Cause"
import type * as Exit from "effect/Exit"
import * as errors from "./errors.js"

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
  Kernel.isRetryable(outcome, errors.isMarkedRetryable(error))

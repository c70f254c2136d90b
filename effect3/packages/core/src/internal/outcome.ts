import * as Kernel from "@sluice/kernel/outcome/Outcome"
import * as Cause from "effect/Cause"
import type * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as errors from "./errors.js"

const firstReason = (cause: Cause.Cause<unknown>): Option.Option<Kernel.Reason> =>
  cause._tag === "Fail" || cause._tag === "Die" ? Option.some(cause) : Option.none()

/** @internal */
export const ofCause = (cause: Cause.Cause<unknown>, options?: Kernel.ClassifyOptions): Kernel.Outcome =>
  Kernel.ofFirst(Option.getOrUndefined(Cause.find(cause, firstReason)), options)

/** @internal */
export const ofExit = (
  exit: Exit.Exit<unknown, unknown>,
  options?: Kernel.ClassifyOptions
): Kernel.Outcome => (exit._tag === "Success" ? "success" : ofCause(exit.cause, options))

/** @internal */
export const isRetryable = (outcome: Kernel.Outcome, error: unknown): boolean =>
  Kernel.isRetryable(outcome, errors.isMarkedRetryable(error))

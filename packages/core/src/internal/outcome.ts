import * as Kernel from "@sluice/kernel/outcome/Outcome"
import * as Cause from "effect/Cause"
import type * as Exit from "effect/Exit"
import * as errors from "./errors.js"

// The kernel reads a timeout by its `_tag` as Effect 3 spelled it (`TimeoutException`); Effect 4's
// `Cause.TimeoutError` is told to it as a drop, the same verdict, through `isDrop` (which the
// kernel also applies to the cause a `DontRetry` wraps).
const timeoutsOnly: Kernel.ClassifyOptions = { isDrop: Cause.isTimeoutError }
const withTimeouts = new WeakMap<Kernel.ClassifyOptions, Kernel.ClassifyOptions>()

/** @internal the options that also count Effect's `TimeoutError` as dropped, made once per options object */
export const errorOptions = (options: Kernel.ClassifyOptions | undefined): Kernel.ClassifyOptions => {
  if (options === undefined || options.isDrop === undefined) return timeoutsOnly
  let found = withTimeouts.get(options)
  if (found === undefined) {
    const isDrop = options.isDrop
    found = { isDrop: (error) => Cause.isTimeoutError(error) || isDrop(error) }
    withTimeouts.set(options, found)
  }
  return found
}

/** @internal */
export const ofError = (error: unknown, options?: Kernel.ClassifyOptions): Kernel.Outcome =>
  Kernel.ofError(error, errorOptions(options))

/** @internal the first failure or defect of a cause decides; nothing but interruptions: the caller gave up */
export const ofCause = (cause: Cause.Cause<unknown>, options?: Kernel.ClassifyOptions): Kernel.Outcome => {
  for (const reason of cause.reasons) {
    if (reason._tag === "Fail") return Kernel.ofError(reason.error, errorOptions(options))
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

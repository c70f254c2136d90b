/**
 * The outcome vocabulary: what one settled call was, computed once from its `Exit`.
 *
 * Every Sluice policy that learns from calls (limit algorithms, the adaptive
 * throttle, the retry policy and its budget, the circuit breaker) reads the same
 * classification, so a failure means the same thing to all of them:
 *
 * | outcome | examples | limit algorithms and throttle learn | retried by default | spends retry budget | the circuit breaker counts it |
 * |---|---|---|---|---|---|
 * | `success` | a value, a 2xx | yes (accept, round-trip sample) | — | no | a success |
 * | `dropped` | remote `Overloaded` (503), `QuotaExceeded` (429), a timeout of the remote call, a `DontRetry` wrapping one | yes (reject) | yes, one layer up | yes | a failure (`isFailure` narrows) |
 * | `refused` | this process said no: `Throttled`, `CircuitOpen`, a local `Overloaded` (own limiter queue full or wait timeout, own shedder, own pacer), a `DontRetry` wrapping one | no | no | no | nothing |
 * | `ignored` | the caller interrupted the call; a 4xx response error (other than 408/429) | no | no | no | nothing |
 * | `failed` | anything else (a defect, a transport error, an application error) | the throttle counts it as answered; limiters ignore it | only errors marked retryable (`Errors.markRetryable`, e.g. transport errors) | yes, when retried | a failure (`isFailure` narrows; defects always) |
 *
 * Where an error came from is part of its value (`Errors.Origin`), not guessed
 * from its type: a concurrency limiter's own refusal is `Overloaded` with
 * `origin: "local"`, a 503 decoded from a response is `origin: "remote"`.
 *
 * The rules are `@sluice/kernel/outcome/Outcome`; this module reads them from an
 * `Exit` or a `Cause`.
 *
 * **Details**
 *
 * - A `Cause` is read through its flat list of reasons (`cause.reasons`): the first
 *   `Fail` or `Die` decides; interruptions alone mean the caller gave up (`ignored`).
 * - Effect's `Cause.TimeoutError` (what `Effect.timeout` fails with) is `dropped`, also
 *   inside a `DontRetry`: a timed-out remote call is evidence of an overloaded backend.
 *
 * @since 0.2.0
 */
import type * as Cause from "effect/Cause"
import type * as Exit from "effect/Exit"
import * as Kernel from "@sluice/kernel/outcome/Outcome"
import * as internal from "./internal/outcome.js"

/**
 * One settled call, classified.
 *
 * @since 0.2.0
 * @category models
 */
export type Outcome = Kernel.Outcome

/**
 * Options of the classifier. `isDrop` names extra errors (or defects) that mean
 * "the backend is overloaded", e.g. an application error for a busy database.
 *
 * @since 0.2.0
 * @category models
 */
export interface ClassifyOptions extends Kernel.ClassifyOptions {}

/**
 * The outcome of a call that failed with `error`.
 *
 * @example
 * ```ts
 * import { Errors, Outcome } from "@sluice/core"
 * import { Cause } from "effect"
 *
 * Outcome.ofError(new Errors.Overloaded({ reason: "503" })) // "dropped"
 * Outcome.ofError(new Errors.Overloaded({ reason: "queue full", origin: "local" })) // "refused"
 * Outcome.ofError(new Errors.Throttled({ key: "api" })) // "refused"
 * Outcome.ofError(new Cause.TimeoutError()) // "dropped"
 * Outcome.ofError(new Error("boom")) // "failed"
 * ```
 * @since 0.2.0
 * @category classifying
 */
export const ofError: (error: unknown, options?: ClassifyOptions) => Outcome = internal.ofError

/**
 * The outcome of a failed call's `Cause`: the first failure (or defect) decides; a
 * cause made only of interruptions is `"ignored"` (the caller gave up).
 *
 * @example
 * ```ts
 * import { Outcome } from "@sluice/core"
 * import { Cause } from "effect"
 *
 * Outcome.ofCause(Cause.interrupt()) // "ignored"
 * Outcome.ofCause(Cause.die("bug")) // "failed"
 * Outcome.ofCause(Cause.combine(Cause.interrupt(), Cause.fail(new Cause.TimeoutError()))) // "dropped"
 * ```
 * @since 0.2.0
 * @category classifying
 */
export const ofCause: (cause: Cause.Cause<unknown>, options?: ClassifyOptions) => Outcome = internal.ofCause

/**
 * The outcome of an `Exit`.
 *
 * @example
 * ```ts
 * import { Outcome } from "@sluice/core"
 * import { Exit } from "effect"
 *
 * Outcome.ofExit(Exit.succeed(1)) // "success"
 * ```
 * @since 0.2.0
 * @category classifying
 */
export const ofExit: (exit: Exit.Exit<unknown, unknown>, options?: ClassifyOptions) => Outcome =
  internal.ofExit

/**
 * Whether a retry policy retries a failure with this outcome by default: `dropped`,
 * and `failed` when the error is marked retryable (a transport error).
 *
 * @example
 * ```ts
 * import { Errors, Outcome } from "@sluice/core"
 *
 * const error = new Errors.Overloaded({ reason: "503" })
 * Outcome.isRetryable(Outcome.ofError(error), error) // true
 * ```
 * @since 0.2.0
 * @category classifying
 */
export const isRetryable: (outcome: Outcome, error: unknown) => boolean = internal.isRetryable

/**
 * Whether limit algorithms and the adaptive throttle learn from this outcome:
 * only `success` and `dropped` say anything about a backend's capacity.
 *
 * @example
 * ```ts
 * import { Outcome } from "@sluice/core"
 *
 * Outcome.isEvidence("refused") // false
 * ```
 * @since 0.2.0
 * @category classifying
 */
export const isEvidence: (outcome: Outcome) => boolean = Kernel.isEvidence

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
 * **Effect's circuit breaker**
 *
 * {@link circuitBreakerClassifier} gives this classification to Effect's own breaker
 * (`effect/persistence`'s `CircuitBreaker`): pass it as the `classify` option of
 * `breaker.execute` or of `HttpClient.withCircuitBreaker`. `dropped` and `failed` are
 * a `Failure` (with the backend's `Retry-After` as its hint), `success` a `Success`,
 * and `refused` and `ignored` are `Ignored`: this process's own refusals (a full or
 * timed-out limiter queue, the throttle, the shedder, an open Sluice breaker) and
 * callers that gave up never open Effect's breaker.
 *
 * **Gotchas**
 *
 * - Effect's defaults disagree, in both directions. `breaker.execute` without
 *   `classify` counts every failure, a local refusal included, so a full limiter
 *   queue opens the circuit against a healthy backend. `HttpClient.withCircuitBreaker`
 *   without it uses `HttpClient.circuitBreakerClassifier`, which ignores typed errors it
 *   does not know: behind a `SluiceHttpClient` a `503` arrives as a `DontRetry`
 *   wrapping a remote `Overloaded`, so that breaker never opens on the backend's 503s.
 * - Where a deadline sits decides what it is, as in Effect: a timeout inside the breaker
 *   (the client's `timeout`, an `Effect.timeout` around the call) is `dropped`, a
 *   failure; a caller's deadline outside it interrupts the call, which is `ignored`.
 * - Only failures are read: on a plain `HttpClient` a `503` response is a successful
 *   `Exit` (a `Success`) unless `HttpClient.filterStatusOk` makes it an error (then
 *   `failed`). A `SluiceHttpClient` already fails it with `Overloaded`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — builds a value for an app to use
 * import { Outcome } from "@sluice/core"
 * import { Effect } from "effect"
 * import { CircuitBreaker } from "effect/persistence"
 *
 * const guarded = <A, E, R>(call: Effect.Effect<A, E, R>) =>
 *   Effect.gen(function* () {
 *     const breaker = yield* CircuitBreaker.make({
 *       tripPolicy: CircuitBreaker.consecutive(5),
 *       openDuration: "30 seconds"
 *     })
 *     return yield* breaker.execute(call, { key: "orders", classify: Outcome.circuitBreakerClassifier })
 *   })
 * ```
 *
 * @since 0.2.0
 */
import type * as Cause from "effect/Cause"
import type * as Exit from "effect/Exit"
import type { CircuitBreaker } from "effect/persistence"
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
 * console.log(Outcome.ofError(new Errors.Overloaded({ reason: "503" }))) // prints: dropped
 * console.log(Outcome.ofError(new Errors.Overloaded({ reason: "queue full", origin: "local" }))) // prints: refused
 * console.log(Outcome.ofError(new Errors.Throttled({ key: "api" }))) // prints: refused
 * console.log(Outcome.ofError(new Cause.TimeoutError())) // prints: dropped
 * console.log(Outcome.ofError(new Error("boom"))) // prints: failed
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
 * console.log(Outcome.ofCause(Cause.interrupt())) // prints: ignored
 * console.log(Outcome.ofCause(Cause.die("bug"))) // prints: failed
 * console.log(Outcome.ofCause(Cause.combine(Cause.interrupt(), Cause.fail(new Cause.TimeoutError())))) // prints: dropped
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
 * console.log(Outcome.ofExit(Exit.succeed(1))) // prints: success
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
 * console.log(Outcome.isRetryable(Outcome.ofError(error), error)) // prints: true
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
 * console.log(Outcome.isEvidence("refused")) // prints: false
 * ```
 * @since 0.2.0
 * @category classifying
 */
export const isEvidence: (outcome: Outcome) => boolean = Kernel.isEvidence

/**
 * Sluice's classification in the shape of the `classify` option of Effect's
 * `CircuitBreaker` (`breaker.execute`) and `HttpClient.withCircuitBreaker`: a call's
 * `Exit` to a `CircuitBreaker.Outcome`.
 *
 * | Sluice's outcome | Effect's breaker records |
 * |---|---|
 * | `success` | `Success` |
 * | `dropped` | `Failure`, with the error's `retryAfter` (also under a `DontRetry`) as its hint |
 * | `failed` | `Failure` |
 * | `refused` | `Ignored` |
 * | `ignored` | `Ignored` |
 *
 * `options.isDrop` names extra errors (or defects) that mean an overloaded backend,
 * as for {@link ofExit}: `classify: (exit) => Outcome.circuitBreakerClassifier(exit, { isDrop })`.
 *
 * **Gotchas**
 *
 * A successful `Exit` is a `Success` whatever its value: on a plain `HttpClient`, a
 * `503` response counts only once `HttpClient.filterStatusOk` makes it an error.
 *
 * @example
 * ```ts
 * import { Errors, Outcome } from "@sluice/core"
 * import { Duration, Exit } from "effect"
 * import { CircuitBreaker } from "effect/persistence"
 * import { HttpClient } from "effect/http"
 *
 * const local = Outcome.circuitBreakerClassifier(Exit.fail(new Errors.Overloaded({ reason: "queue full", origin: "local" })))
 * console.log(local) // prints: { _tag: 'Ignored' }
 * const remote = Outcome.circuitBreakerClassifier(
 *   Exit.fail(new Errors.Overloaded({ reason: "server", retryAfter: Duration.seconds(2) }))
 * )
 * console.log(JSON.stringify(remote))
 * // prints: {"_tag":"Failure","retryAfter":{"_id":"Duration","_tag":"Millis","millis":2000}}
 *
 * // Effect's breaker in front of an HttpClient, learning through Sluice's outcomes:
 * const guard = (breaker: CircuitBreaker.CircuitBreaker) =>
 *   HttpClient.withCircuitBreaker({ breaker, classify: Outcome.circuitBreakerClassifier })
 * ```
 * @since 1.0.0
 * @category classifying
 */
export const circuitBreakerClassifier: <A, E>(
  exit: Exit.Exit<A, E>,
  options?: ClassifyOptions
) => CircuitBreaker.Outcome = internal.circuitBreakerClassifier

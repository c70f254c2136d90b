/**
 * The outcome vocabulary: what one settled call was, decided once from plain facts (did it
 * succeed, the error's `_tag`, who refused it, the response status, was it interrupted), so a
 * failure means the same thing to every policy that learns from calls:
 *
 * | outcome | examples | limit algorithms and throttle learn | retried by default |
 * |---|---|---|---|
 * | `success` | a value, a 2xx | yes (accept, round-trip sample) | — |
 * | `dropped` | remote `Overloaded` (503), `QuotaExceeded` (429), a timeout of the remote call, a `DontRetry` wrapping one | yes (reject) | yes, one layer up |
 * | `refused` | this process said no (`origin: "local"`): `Throttled`, `CircuitOpen`, a local `Overloaded`, a `DontRetry` wrapping one | no | no |
 * | `ignored` | the caller interrupted the call; a 4xx other than 408/429 | no | no |
 * | `failed` | anything else (a defect, a transport error, an application error) | the throttle counts it as answered | only errors marked retryable |
 *
 * Only `success` and `dropped` say anything about a backend's capacity: a local refusal must not
 * teach a limit algorithm that the backend is overloaded (it would shrink for nothing), and an
 * interrupted call or a bad request says nothing about load either.
 *
 * @since 0.2.0
 */

/**
 * One settled call, classified.
 *
 * @since 0.2.0
 */
export type Outcome = "success" | "dropped" | "refused" | "ignored" | "failed"

/**
 * Options of the classifier. `isDrop` names extra errors (or defects) that mean "the backend is
 * overloaded", e.g. an application error for a busy database.
 *
 * @since 0.2.0
 */
export interface ClassifyOptions {
  readonly isDrop?: ((error: unknown) => boolean) | undefined
}

/**
 * The outcome of a call its caller interrupted (and that failed with nothing else): it says
 * nothing about the backend.
 *
 * @since 0.2.0
 */
export const interrupted: Outcome = "ignored"

/**
 * The outcome of a response error with this status: a 4xx other than 408 (timeout) and 429 (too
 * many requests) is about the request, not the backend's load.
 *
 * @since 0.2.0
 */
export const ofStatus = (status: number | undefined): Outcome =>
  status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429
    ? "ignored"
    : "failed"

const tagOf = (u: unknown): unknown =>
  typeof u === "object" && u !== null ? (u as { readonly _tag?: unknown })._tag : undefined

const statusOf = (u: object): number | undefined => {
  const response = (u as { readonly response?: { readonly status?: unknown } }).response
  const status = response?.status
  return typeof status === "number" ? status : undefined
}

/**
 * The outcome of a call that failed with `error`, read from its plain fields: `_tag` (Sluice's
 * errors; a timeout: Effect 3's `TimeoutException`, Effect 4's `TimeoutError`; an HTTP client's
 * `ResponseError` (Effect 3) or `HttpClientError` (Effect 4) and its `response.status`), `origin` (`"local"`
 * when this process refused) and the `cause` a `DontRetry` gave up on.
 *
 * @since 0.2.0
 */
export const ofError = (error: unknown, options?: ClassifyOptions): Outcome => {
  if (options?.isDrop !== undefined && options.isDrop(error)) return "dropped"
  switch (tagOf(error)) {
    case "Overloaded":
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
    case "TimeoutError":
      return "dropped"
    case "ResponseError":
    case "HttpClientError":
      // no response (a transport error) reads as no status: failed
      return ofStatus(statusOf(error as object))
  }
  return "failed"
}

/**
 * The outcome of a call that died with `defect`: `failed`, unless `isDrop` says the defect means
 * an overloaded backend.
 *
 * @since 0.2.0
 */
export const ofDefect = (defect: unknown, options?: ClassifyOptions): Outcome =>
  options?.isDrop !== undefined && options.isDrop(defect) ? "dropped" : "failed"

/**
 * A reason a call failed, as an Effect `Cause` lists them: a failure (`Fail`, with its `error`)
 * or a defect (`Die`, with its `defect`).
 *
 * @since 0.2.0
 */
export type Reason =
  { readonly _tag: "Fail"; readonly error: unknown } | { readonly _tag: "Die"; readonly defect: unknown }

/**
 * The outcome of a call that did not succeed, from the first of its reasons that is a failure or
 * a defect; with none (`undefined`: nothing but interruptions) the caller gave up, so it is
 * {@link interrupted}.
 *
 * @since 0.2.0
 */
export const ofFirst = (reason: Reason | undefined, options?: ClassifyOptions): Outcome =>
  reason === undefined
    ? interrupted
    : reason._tag === "Fail"
      ? ofError(reason.error, options)
      : ofDefect(reason.defect, options)

/**
 * The classifier options of several policies at once (one `isDrop` each, or none): an error is a
 * drop when any of them says so; `undefined` when none has a say.
 *
 * @since 0.2.0
 */
export const anyDrop = (isDrops: ReadonlyArray<(error: unknown) => boolean>): ClassifyOptions | undefined =>
  isDrops.length === 0
    ? undefined
    : isDrops.length === 1
      ? { isDrop: isDrops[0] }
      : { isDrop: (error) => isDrops.some((isDrop) => isDrop(error)) }

/**
 * Whether a failure is one the layer above may retry: `Overloaded` or `QuotaExceeded` (or an error
 * `marked` retryable, such as a transport error or a timeout) that this process did not refuse
 * itself (`origin: "local"`). The rest passes through a retry policy untouched.
 *
 * @since 0.2.0
 */
export const isRetryableError = (error: unknown, marked: boolean): boolean => {
  const tag = tagOf(error)
  return (
    (tag === "Overloaded" || tag === "QuotaExceeded" || marked) &&
    (error as { readonly origin?: unknown }).origin !== "local"
  )
}

/**
 * Whether a retry policy retries a failure with this outcome by default: `dropped`, and `failed`
 * when the error is marked retryable (a transport error).
 *
 * @since 0.2.0
 */
export const isRetryable = (outcome: Outcome, markedRetryable: boolean): boolean =>
  outcome === "dropped" || (outcome === "failed" && markedRetryable)

/**
 * Whether limit algorithms and the adaptive throttle learn from this outcome: only `success` and
 * `dropped` say anything about a backend's capacity.
 *
 * @since 0.2.0
 */
export const isEvidence = (outcome: Outcome): boolean => outcome === "success" || outcome === "dropped"

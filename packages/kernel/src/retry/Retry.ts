/**
 * A retry policy's rules: which failures it retries, when it gives up, and when the next try
 * may start. Retries happen at one layer only, the one directly above the layer that refused
 * (the SRE book's "Handling Overload"): a policy retries what its predicate says (by default what
 * `Outcome` calls retryable), and a failure a layer above could retry leaves it as a terminal
 * `DontRetry` once the policy gives up, so no layer above retries it again.
 *
 * - **passed on** untouched: a `DontRetry` (a lower layer already gave up), `Throttled` and
 *   `CircuitOpen` (local refusals that are never retried), and any failure that is neither
 *   retried nor of a retryable type;
 * - **refused** (`"refused"`): this process refused the work itself (its own limiter queue,
 *   shedder or pacer: `origin: "local"`): never retried, and since its type is retryable it
 *   leaves as a `DontRetry`;
 * - **not retryable** (`"not-retryable"`): a retryable type the predicate does not retry, or a
 *   quota that resets later than the policy is willing to wait (`maxRetryAfter`);
 * - **attempts** (`"attempts"`): `maxAttempts` tries made (the first try included), or the
 *   schedule is done;
 * - **timeout** (`"timeout"`): the next try could not start before the caller's deadline. It would
 *   only be cut off unsent, so it is not scheduled and spends no retry budget.
 *
 * The next try waits for the schedule's delay, or for the server's `Retry-After` hint when that
 * is longer (see `Backoff`).
 *
 * @since 0.2.0
 */
import type { Issue } from "../options/Field.js"
import * as Field from "../options/Field.js"
import * as Outcome from "../outcome/Outcome.js"
import * as Backoff from "./Backoff.js"

/**
 * The options of a policy, their ranges and defaults: at most 3 tries per request, the first one
 * included (`maxAttempts`), and server hints taken up to 30 seconds (`maxRetryAfter`).
 *
 * @since 0.2.0
 */
export const options = {
  maxAttempts: Field.withDefault(Field.positiveInt, 3),
  maxRetryAfter: Field.duration(Field.withDefault(Field.finiteDuration, 30_000))
}

/**
 * The issue with a policy's options that are not numbers, if any: `isRetryable` must be a
 * predicate, and `budget` a non-empty client key or a budget handle (as `isHandle` tells one).
 *
 * @since 0.2.0
 */
export const optionsIssue = (
  options: { readonly isRetryable?: unknown; readonly budget?: unknown },
  isHandle: (budget: unknown) => boolean
): Issue | undefined => {
  if (options.isRetryable !== undefined && typeof options.isRetryable !== "function") {
    return { path: ["isRetryable"], message: "expected a predicate function" }
  }
  const budget = options.budget
  if (budget === undefined || (typeof budget === "string" && budget.length > 0) || isHandle(budget))
    return undefined
  return { path: ["budget"], message: "expected a RetryBudget.Budget or a non-empty client key" }
}

/**
 * What a failure after some tries comes to: passed on as it is, retried, or given up on (and
 * why).
 *
 * @since 0.2.0
 */
export type Verdict = "pass" | "retry" | "not-retryable" | "refused" | "attempts"

/**
 * What a policy judges failures with: its limits, its predicate, whether a failure is of a type a
 * layer above could retry, and how to read a `retryAfter` hint (the binding's durations) as
 * milliseconds (`undefined` when it is not one).
 *
 * @since 0.2.0
 */
export interface Judge {
  readonly maxAttempts: number
  readonly maxRetryAfterMillis: number
  readonly isRetryable: (error: unknown) => boolean
  readonly isRetryableType: (error: unknown) => boolean
  readonly millisOf: (hint: unknown) => number | undefined
}

const tagOf = (u: unknown): unknown =>
  typeof u === "object" && u !== null ? (u as { readonly _tag?: unknown })._tag : undefined

/**
 * The verdict on `error`, the failure of try number `attempts` (1 for the first try). The
 * policy's predicate is asked only about failures the rules above it leave open.
 *
 * @since 0.2.0
 */
export const verdict = (error: unknown, attempts: number, judge: Judge): Verdict => {
  const tag = tagOf(error)
  if (tag === "DontRetry" || tag === "Throttled" || tag === "CircuitOpen") return "pass"
  if (tag === "Overloaded" || tag === "QuotaExceeded") {
    if (Outcome.ofError(error) === "refused") return "refused"
    // A quota that resets later than we are willing to wait is not worth holding the caller for.
    if (
      tag === "QuotaExceeded" &&
      !Backoff.isUsableRetryAfter(judge.millisOf(Backoff.retryAfterOf(error)) ?? 0, judge.maxRetryAfterMillis)
    ) {
      return "not-retryable"
    }
  }
  if (judge.isRetryable(error)) return attempts >= judge.maxAttempts ? "attempts" : "retry"
  // What a layer above could retry must not come out as itself.
  return judge.isRetryableType(error) ? "not-retryable" : "pass"
}

/**
 * The delay before the next try at `now`: the schedule's (it asked for the try at `scheduledAt`;
 * `undefined` when it is done) or the server's hint (`hintMillis`, already clamped; 0 without
 * one), whichever is longer. `"attempts"` when the schedule is done, `"timeout"` when the try
 * could not start before `deadline`.
 *
 * @since 0.2.0
 */
export const nextDelay = (
  now: number,
  scheduledAt: number | undefined,
  hintMillis: number,
  deadline: number
): number | "attempts" | "timeout" => {
  if (scheduledAt === undefined) return "attempts"
  const delay = Math.max(0, scheduledAt - now, hintMillis)
  return now + delay >= deadline ? "timeout" : delay
}

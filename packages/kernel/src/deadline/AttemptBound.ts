/**
 * How long a call and each of its attempts may take, when a caller gives the whole call a
 * timeout and each attempt its own bound. The call's deadline is `now + timeout`, unless an
 * enclosing caller's deadline comes first; every retry, backoff and wait for a permit lives
 * under it.
 *
 * Only an attempt's own bound, measured from its send, says the backend was too slow: that
 * timeout is a drop every policy learns from. When less than the bound is left of the
 * deadline, the rest went on waiting (for a permit, in a backoff, an earlier try, an enclosing
 * caller): the attempt is not bounded, and the deadline's own timer, a little later, ends it
 * as an interruption every policy ignores. One exception: a first try that waited for nothing
 * had the whole call for its bound, so the deadline ends it as the bound would have.
 *
 * Times are epoch milliseconds; `Infinity` is "no deadline" or "no bound".
 *
 * @since 0.2.0
 */

/**
 * How much later than an attempt's own timer the whole call's timer fires, so that an attempt
 * given its whole bound times out (a drop) before the call is interrupted.
 *
 * @since 0.2.0
 */
export const GRACE_MILLIS = 2

/**
 * An attempt's bound: its own, else the whole call's timeout, else none (`Infinity`).
 *
 * @since 0.2.0
 */
export const attemptTimeout = (attempt: number | undefined, call: number | undefined): number =>
  attempt ?? call ?? Infinity

/**
 * A call's deadline under `timeout` and an enclosing caller's `deadline` (`Infinity`: none),
 * the time `left` until it (never negative), and when the call's own `timer` fires (`left` and
 * {@link GRACE_MILLIS}).
 *
 * @since 0.2.0
 */
export const call = (
  now: number,
  timeout: number,
  enclosing: number
): { readonly deadline: number; readonly left: number; readonly timer: number } => {
  const deadline = Math.min(enclosing, now + timeout)
  const left = Math.max(0, deadline - now)
  return { deadline, left, timer: left + GRACE_MILLIS }
}

/**
 * The facts an attempt's bound is decided from.
 *
 * @since 0.2.0
 */
export interface AttemptFacts {
  /** the attempt's bound (`Infinity`: none) */
  readonly attemptTimeout: number
  /** the call's deadline (`Infinity`: none) */
  readonly deadline: number
  readonly now: number
  /** when the call began, as long as it has not waited for a permit (`Infinity` once it has) */
  readonly unwaitedSince: number
  /** tries before this one */
  readonly attempt: number
}

/**
 * How long this attempt may take from now, in milliseconds; `undefined` when it is not bounded
 * (the deadline's timer ends it).
 *
 * @since 0.2.0
 */
export const attempt = (facts: AttemptFacts): number | undefined => {
  const { attemptTimeout, deadline, now } = facts
  if (attemptTimeout === Infinity) return undefined
  if (deadline === Infinity) return attemptTimeout
  const left = deadline - now
  if (left >= attemptTimeout) return attemptTimeout
  // a first try that waited for nothing: only the call's own steps stand between its start and now
  if (facts.attempt === 0 && deadline - facts.unwaitedSince >= attemptTimeout) return Math.max(1, left)
  return undefined
}

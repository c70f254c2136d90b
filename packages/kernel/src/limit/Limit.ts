/**
 * The shape every concurrency limit shares, after Netflix concurrency-limits' `Limit`: a
 * state machine that holds the current limit (how many requests may be in flight at once)
 * and changes it when the limiter that enforces it reports how a request ended. It knows
 * nothing of threads, fibers or clocks: the limiter hands it a {@link Sample} with the time
 * already read, so one algorithm runs unchanged in production, under a test clock and in a
 * simulation.
 *
 * Also the bounds rule every algorithm shares: `[minLimit, maxLimit]`, with a default
 * `initial` that is clamped into them rather than refused, because a user who only narrows
 * the bounds did not choose the initial value.
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"
import type * as Settled from "../outcome/Outcome.js"

/**
 * How a request ended, from the limiter's point of view:
 * - `success`: it completed; its round-trip time is a latency measurement;
 * - `dropped`: the backend was overloaded: the limit should come down;
 * - `ignored`: any other error, or interruption: says nothing about capacity.
 *
 * @since 0.2.0
 */
export type Outcome = "success" | "dropped" | "ignored"

/**
 * One measurement, reported once per request that held a permit.
 *
 * Permit ids increase by one per permit granted (starting at 0), so "every request in
 * flight right now" is exactly "every request whose id is below `nextId` and which has not
 * reported yet": an algorithm can remember a set of in-flight requests as one number.
 *
 * @since 0.2.0
 */
export interface Sample {
  /** The id of the permit this request held. */
  readonly id: number
  /** The id the next permit will get: every id below it has been granted. */
  readonly nextId: number
  readonly outcome: Outcome
  /** Milliseconds between the permit being granted and the request ending (queue wait excluded). */
  readonly rtt: number
  /** Requests in flight when the sample is reported, this one included. */
  readonly inFlight: number
  /** The clock reading (epoch millis) when the sample is reported. */
  readonly now: number
  /**
   * When the request left (clock millis): the grant of its permit. Present when the
   * algorithm implements {@link Limit.onDeparture}.
   */
  readonly departedAt?: number | undefined
  /**
   * What {@link Limit.onDeparture} returned for this request (for example a probe number),
   * handed back with its outcome.
   */
  readonly mark?: number | undefined
}

/**
 * A request leaving: its permit `id`, the requests in flight with it (`inFlight`, this one
 * included) and the clock reading `now`.
 *
 * @since 0.2.0
 */
export interface Departure {
  readonly id: number
  readonly inFlight: number
  readonly now: number
}

/**
 * A limit algorithm. `limit` may be fractional; a limiter grants a permit only while
 * `inFlight < limit`. `onSample` updates the state and returns the new limit; it is called
 * synchronously, and the sample must not be retained.
 *
 * @since 0.2.0
 */
export interface Limit {
  readonly name: string
  readonly limit: number
  onSample(sample: Sample): number
  /**
   * `false` declares that `onSample` reads neither `rtt` nor `now` (the congestion window,
   * a fixed limit): the limiter may then skip the clock read when a request settles, and
   * such samples carry `rtt` 0 and the admission time as `now`. Absent or `true`, every
   * sample is timed.
   */
  readonly usesTime?: boolean | undefined
  /**
   * Optional: called when a request departs (its permit is granted), with the number in
   * flight with it. The returned number comes back as {@link Sample.mark} with the
   * request's outcome (BBR's per-packet delivery state, Netflix concurrency-limits'
   * `inflight` at start).
   */
  onDeparture?(departure: Departure): number | undefined
  /**
   * Optional: the spacing (millis) the algorithm wants between departures; `undefined`
   * means "do not pace now", `Infinity` "hold". BBR's pacing rate, as an interval.
   */
  readonly pacingInterval?: number | undefined
  /**
   * Optional: asked by a pacer before it releases departures. A positive `k` releases the
   * next `k` waiting departures at once and pushes the rest of the schedule back by `k`
   * intervals (a burst probe at the same average rate); a negative `-m` pauses the schedule
   * by `m` intervals. Each call consumes the request.
   */
  takeBurst?(now: number): number
  /**
   * Optional: the clock millis at which the algorithm wants {@link onTimer} called
   * (`undefined`: no timer). Lets an algorithm act on the absence of an outcome, e.g. "no
   * rejection came back within a deadline".
   */
  readonly nextTimer?: number | undefined
  /** Optional: called at (or after) {@link nextTimer}. */
  onTimer?(now: number): void
}

/**
 * The bounds every limit algorithm runs with: `initial`, `minLimit`, `maxLimit`
 * (`Infinity` allowed).
 *
 * @since 0.2.0
 */
export interface Bounds {
  readonly initial: number
  readonly minLimit: number
  readonly maxLimit: number
}

/**
 * The default `initial` limit, clamped into `[minLimit, maxLimit]` when not given.
 *
 * @since 0.2.0
 */
export const DEFAULT_INITIAL = 20

/**
 * The default `maxLimit`: finite, so that a limit that only ever hears successes (a backend
 * that never pushes back) cannot grow without bound.
 *
 * @since 0.2.0
 */
export const DEFAULT_MAX_LIMIT = 1000

/**
 * Issues of the bounds: `minLimit ≤ maxLimit`, and an explicit `initial` outside them is an
 * error (a default one is clamped by {@link resolveBounds} instead).
 *
 * @since 0.2.0
 */
export const boundsIssues = (bounds: {
  readonly initial?: number | undefined
  readonly minLimit: number
  readonly maxLimit: number
}): Array<Field.Issue> =>
  Field.orderIssues(
    bounds.initial === undefined
      ? [
          ["minLimit", bounds.minLimit],
          ["maxLimit", bounds.maxLimit]
        ]
      : [
          ["minLimit", bounds.minLimit],
          ["initial", bounds.initial],
          ["maxLimit", bounds.maxLimit]
        ]
  )

/**
 * Fills in the default `initial` ({@link DEFAULT_INITIAL}), clamped into
 * `[minLimit, maxLimit]` so the default agrees with the user's bounds.
 *
 * @since 0.2.0
 */
export const resolveBounds = <
  O extends { readonly initial?: number | undefined; readonly minLimit: number; readonly maxLimit: number }
>(
  options: O
): O & { readonly initial: number } =>
  options.initial !== undefined
    ? (options as O & { readonly initial: number })
    : { ...options, initial: Math.min(options.maxLimit, Math.max(options.minLimit, DEFAULT_INITIAL)) }

/**
 * A bounded algorithm's options before the default `initial` is filled in.
 *
 * @since 0.2.0
 */
export type Unresolved<C extends Bounds> = Omit<C, "initial"> & { readonly initial?: number | undefined }

const boundsSpec: Field.Spec<Unresolved<Bounds>> = {
  initial: Field.optional(Field.positiveInt),
  minLimit: Field.withDefault(Field.positiveInt, 1),
  maxLimit: Field.withDefault(Field.positiveOrInfinity, DEFAULT_MAX_LIMIT)
}

/**
 * Validates the options of a bounded algorithm: the bounds (integers, `minLimit` 1, `maxLimit`
 * {@link DEFAULT_MAX_LIMIT}, `Infinity` allowed) and its own `spec`, then `rules` across fields
 * (by default {@link boundsIssues}), then the default `initial` ({@link resolveBounds}).
 *
 * @since 0.2.0
 */
export const configureBounded =
  <C extends Bounds>(
    spec: Field.Spec<Omit<C, keyof Bounds>>,
    rules: (config: Unresolved<C>) => ReadonlyArray<Field.Issue> = boundsIssues
  ) =>
  (input: object): Field.Result<C> =>
    Field.map(
      Field.resolve({ ...boundsSpec, ...spec } as Field.Spec<Unresolved<C>>, input, rules),
      (config) => resolveBounds(config) as unknown as C
    )

/**
 * What a limit hears of a settled call's outcome (success, dropped, refused, ignored, failed):
 * `success` and `dropped` as they are, anything else `ignored` (it says nothing about capacity).
 *
 * @since 0.2.0
 */
export const sampleOutcome = (outcome: Settled.Outcome): Outcome =>
  outcome === "success" || outcome === "dropped" ? outcome : "ignored"

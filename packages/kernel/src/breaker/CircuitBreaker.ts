/**
 * The circuit breaker's state machine: stop calling a dependency that keeps failing, and probe
 * it again after a while (the pattern of Nygard's "Release It!"; the ratio trip over a sliding
 * window with a minimum number of calls, and the K permitted half-open calls, are resilience4j's).
 *
 * - **closed**: calls pass. The breaker trips after `consecutiveFailures` failures in a row, or
 *   when the share of failures over a sliding window reaches `failureRatio.ratio` once at least
 *   `failureRatio.minimumCalls` calls completed in it (compared exactly: 55 failures of 100 reach
 *   0.55, which `failures >= 0.55 * calls` in floating point misses).
 * - **open**: calls are refused until `halfOpenAt`, `openFor` after the trip: a fixed number of
 *   milliseconds, or a function of the trips since the breaker last closed (a backoff).
 * - **half-open**: at most `halfOpenProbes` calls (K) are let through; the breaker closes once K
 *   probes succeeded and re-opens on the first probe failure.
 * - **isolated**: forced open by `isolate` until `reset`; it never half-opens by itself.
 *
 * A permit is the generation (state) it was taken under: every transition starts a new one, and
 * the outcome of a call admitted under a generation that is gone is ignored (a slow success from
 * the closed state must not close a breaker that tripped since). Within one generation the state
 * does not change, so a permit of the current generation taken while half-open is a probe.
 *
 * Time is a parameter (epoch milliseconds). Settling takes it as a function, read only when the
 * rule needs it (a success in the closed state needs none unless a failure ratio is configured),
 * so the binding's fast path reads no clock.
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"
import type { Outcome } from "../outcome/Outcome.js"
import * as Ratio from "../stats/Ratio.js"
import { RollingCounter } from "../stats/RollingCounter.js"

/**
 * The breaker's state. `isolated` is open until `reset`; bindings report it as open.
 *
 * @since 0.2.0
 */
export type State = "closed" | "half-open" | "open" | "isolated"

/**
 * The state a breaker reports to its callers: an isolated breaker is open.
 *
 * @since 0.2.0
 */
export type ReportedState = "closed" | "half-open" | "open"

/**
 * The state as reported: `isolated` is `open`.
 *
 * @since 0.2.0
 */
export const reported = (state: State): ReportedState => (state === "isolated" ? "open" : state)

const DEFAULT_CONSECUTIVE = 5
const DEFAULT_OPEN_MILLIS = 5_000

/**
 * The options of a breaker as its users write them, with their ranges and defaults:
 * `consecutiveFailures` (a positive integer; see {@link BreakerOptions}), `openFor` (a positive,
 * finite duration, default 5 seconds) and `halfOpenProbes` (a positive integer, default 1).
 *
 * @since 0.2.0
 */
export const options = {
  consecutiveFailures: Field.optional<number>(Field.positiveInt),
  openFor: Field.duration(Field.withDefault(Field.positiveDuration, DEFAULT_OPEN_MILLIS)),
  halfOpenProbes: Field.withDefault(Field.positiveInt, 1)
}

/**
 * The options of a failure-ratio trip as its users write them: a `ratio` in (0, 1], a positive,
 * finite `window`, the `minimumCalls` before the ratio is judged (a positive integer) and the
 * window's `buckets` (a positive integer, default 10).
 *
 * @since 0.2.0
 */
export const failureRatioOptions = {
  ratio: Field.required<number>(Field.positiveRatio),
  window: Field.duration(Field.required<number>(Field.positiveDuration)),
  minimumCalls: Field.required<number>(Field.positiveInt),
  buckets: Field.withDefault(Field.positiveInt, 10)
}

/**
 * @since 0.2.0
 */
export interface FailureRatioOptions {
  /** The share of failures that trips the breaker, in (0, 1]. */
  readonly ratio: number
  /** The sliding window, in milliseconds: positive and finite. */
  readonly windowMillis: number
  /** The fewest calls in the window before the ratio is judged: a positive integer. */
  readonly minimumCalls: number
  /** How many buckets slice the window: a positive integer, default 10. */
  readonly buckets?: number | undefined
}

/**
 * @since 0.2.0
 */
export interface BreakerOptions {
  /**
   * Failures in a row that trip the breaker: a positive integer. Default 5 when `failureRatio` is
   * not given; when only `failureRatio` is given, only the ratio trips it.
   */
  readonly consecutiveFailures?: number | undefined
  /** Trip on the share of failures over a sliding window. */
  readonly failureRatio?: FailureRatioOptions | undefined
  /**
   * How long a trip keeps the breaker open, in milliseconds: a positive number (default 5000), or
   * a function of the time of the trip and the number of trips since the breaker last closed
   * (0 for the first). A negative answer is 0; `undefined` or a non-finite one keeps the previous
   * open duration (5000 before the first), so a backoff that has run out stays at its last step.
   */
  readonly openFor?: number | ((now: number, trips: number) => number | undefined) | undefined
  /** How many probes (K) a half-open breaker lets through: a positive integer, default 1. */
  readonly halfOpenProbes?: number | undefined
  /**
   * Whether a failed call's typed error counts against the dependency (default: every failure
   * counts); see {@link Breaker.settle}.
   */
  readonly isFailure?: ((error: unknown) => boolean) | undefined
  /**
   * Called synchronously on every transition, after the state changed (and before the new
   * `halfOpenAt` of a trip is set), including `closed → closed` on a `reset`.
   */
  readonly onTransition?: ((from: State, to: State, now: number) => void) | undefined
}

const CLOSED = 0
const HALF_OPEN = 1
const OPEN = 2
const ISOLATED = 3
type InternalState = typeof CLOSED | typeof HALF_OPEN | typeof OPEN | typeof ISOLATED
const stateName: ReadonlyArray<State> = ["closed", "half-open", "open", "isolated"]

// The options under the constructor's names (`openFor` apart: it may be a function).
const spec = { consecutiveFailures: options.consecutiveFailures, halfOpenProbes: options.halfOpenProbes }
const failureRatioSpec = {
  ratio: failureRatioOptions.ratio,
  windowMillis: failureRatioOptions.window,
  minimumCalls: failureRatioOptions.minimumCalls,
  buckets: failureRatioOptions.buckets
}

/**
 * A circuit breaker's state machine. Mutable: the owner passes the time to every call.
 *
 * @since 0.2.0
 */
export class Breaker {
  private st: InternalState = CLOSED
  private gen = 0
  private consecutive = 0
  private readonly threshold: number
  private readonly ratio: Ratio.ExactRatio | undefined
  private readonly minimumCalls: number
  private readonly calls: RollingCounter | undefined
  private readonly failures: RollingCounter | undefined
  private readonly probes: number
  private readonly openFor: number | ((now: number, trips: number) => number | undefined)
  private readonly onTransition: ((from: State, to: State, now: number) => void) | undefined
  private readonly isFailure: ((error: unknown) => boolean) | undefined
  private trips = 0
  private openUntil = 0
  private openMillis = DEFAULT_OPEN_MILLIS
  private probesStarted = 0
  private probesSucceeded = 0

  /** Throws a `RangeError` naming the field for a bad option ({@link options}, {@link failureRatioOptions}). */
  constructor(input: BreakerOptions = {}) {
    const { consecutiveFailures, halfOpenProbes } = Field.resolveOrThrow(spec, input)
    const { failureRatio, openFor = DEFAULT_OPEN_MILLIS } = input
    this.threshold = consecutiveFailures ?? (failureRatio === undefined ? DEFAULT_CONSECUTIVE : Infinity)
    if (failureRatio !== undefined) {
      const { buckets, minimumCalls, ratio, windowMillis } = Field.resolveOrThrow(
        failureRatioSpec,
        failureRatio,
        ["failureRatio"]
      )
      this.ratio = Ratio.make(ratio)
      this.minimumCalls = minimumCalls
      this.calls = new RollingCounter({ windowMillis, buckets })
      this.failures = new RollingCounter({ windowMillis, buckets })
    } else {
      this.ratio = undefined
      this.minimumCalls = Infinity
      this.calls = undefined
      this.failures = undefined
    }
    this.probes = halfOpenProbes
    if (typeof openFor === "number")
      Field.orThrow(Field.fields([["openFor", openFor, options.openFor.check]]))
    this.openFor = openFor
    this.onTransition = input.onTransition
    this.isFailure = input.isFailure
  }

  /** The current generation: every transition starts a new one. */
  get generation(): number {
    return this.gen
  }

  /** When an open breaker half-opens (epoch ms); `Infinity` while isolated. */
  get halfOpenAt(): number {
    return this.st === ISOLATED ? Infinity : this.openUntil
  }

  /** How long a refused call should wait before the breaker may let one through, in ms. */
  retryAfterMillis(now: number): number {
    const at = this.halfOpenAt
    return at === Infinity ? Infinity : Math.max(0, at - now)
  }

  /** The state at `now` (an open breaker whose time is up half-opens). */
  state(now: number): State {
    this.poll(now)
    return stateName[this.st]!
  }

  /** Whether a call may start at `now` (closed, or a half-open probe slot is free). */
  admissible(now: number): boolean {
    if (this.st === CLOSED) return true
    this.poll(now)
    return this.st === HALF_OPEN && this.probesStarted < this.probes
  }

  /**
   * Takes a permit under the current state without checking {@link admissible} (a half-open
   * breaker counts a probe): the generation to settle it with.
   */
  take(): number {
    if (this.st === HALF_OPEN) this.probesStarted++
    return this.gen
  }

  /** A permit at `now` (the generation to settle it with), or `undefined` when refused. */
  tryAcquire(now: number): number | undefined {
    return this.st === CLOSED || this.admissible(now) ? this.take() : undefined
  }

  /** Whether a permit of `generation` is a half-open probe (`false` once its generation is gone). */
  isProbe(generation: number): boolean {
    return generation === this.gen && this.st === HALF_OPEN
  }

  /** The call admitted under `generation` succeeded (or failed in a way that does not count). */
  onSuccess(generation: number, now: () => number): void {
    if (generation !== this.gen) return
    if (this.st === HALF_OPEN) {
      if (++this.probesSucceeded >= this.probes) this.enter(CLOSED, now())
    } else {
      this.consecutive = 0
      this.calls?.add(now())
    }
  }

  /** The call admitted under `generation` failed. */
  onFailure(generation: number, now: () => number): void {
    if (generation !== this.gen) return
    if (this.st === HALF_OPEN) this.trip(now())
    else this.closedFailure(now())
  }

  /**
   * The call admitted under `generation` says nothing about the dependency (refused further in,
   * abandoned by its caller): a probe gives its slot back.
   */
  onIgnored(generation: number): void {
    if (generation === this.gen && this.st === HALF_OPEN) this.probesStarted--
  }

  /**
   * Settles a permit of `generation` with the outcome of its call: `success` is a success;
   * `dropped` and `failed` are a failure when it counts against the dependency (else a success);
   * `refused` and `ignored` say nothing (a probe gives its slot back). A failure counts when
   * `isFailure` says so of its typed error (`errorOf(context)`), when that predicate throws, and
   * always for a defect or a call settled without an error (`undefined`). A permit of a
   * generation that is gone is ignored, and nothing is asked.
   */
  settle<C>(
    generation: number,
    outcome: Outcome,
    now: () => number,
    errorOf: (context: C) => { readonly error: unknown } | undefined,
    context: C
  ): void {
    if (generation !== this.gen) return
    if (outcome === "refused" || outcome === "ignored") this.onIgnored(generation)
    else if (outcome !== "success" && this.counts(errorOf, context)) this.onFailure(generation, now)
    else this.onSuccess(generation, now)
  }

  private counts<C>(errorOf: (context: C) => { readonly error: unknown } | undefined, context: C): boolean {
    if (this.isFailure === undefined) return true
    const failure = errorOf(context)
    if (failure === undefined) return true
    try {
      return this.isFailure(failure.error)
    } catch {
      return true
    }
  }

  /** Forces the breaker open until {@link reset}. */
  isolate(now: number): void {
    this.enter(ISOLATED, now)
  }

  /** Closes the breaker and forgets failures, trips and probes. */
  reset(now: number): void {
    this.enter(CLOSED, now)
  }

  private enter(to: InternalState, now: number): void {
    const from = this.st
    this.st = to
    this.gen++
    this.consecutive = 0
    this.probesStarted = 0
    this.probesSucceeded = 0
    if (to === CLOSED) {
      this.calls?.reset()
      this.failures?.reset()
      this.trips = 0
    }
    this.onTransition?.(stateName[from]!, stateName[to]!, now)
  }

  private trip(now: number): void {
    if (typeof this.openFor === "number") this.openMillis = this.openFor
    else {
      const millis = this.openFor(now, this.trips)
      if (millis !== undefined && Number.isFinite(millis)) this.openMillis = Math.max(0, millis)
    }
    const trips = this.trips + 1
    this.enter(OPEN, now)
    this.trips = trips
    this.openUntil = now + this.openMillis
  }

  private poll(now: number): void {
    if (this.st === OPEN && now >= this.openUntil) this.enter(HALF_OPEN, now)
  }

  private closedFailure(now: number): void {
    this.consecutive++
    let tripped = this.consecutive >= this.threshold
    if (this.calls !== undefined) {
      this.calls.add(now)
      this.failures!.add(now)
      const calls = this.calls.total(now)
      if (calls >= this.minimumCalls && this.ratio!.atLeast(this.failures!.total(now), calls)) tripped = true
    }
    if (tripped) this.trip(now)
  }
}

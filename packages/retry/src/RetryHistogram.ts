/**
 * The server side of retry control: every incoming request carries its attempt
 * number (`x-sluice-attempt`, 0 for a first try); the server records it in a
 * windowed histogram and, when the share of retries says that clients everywhere
 * are retrying (their backends — this server — are evidently overloaded), answers
 * "don't retry" so the retries stop at this layer instead of multiplying.
 *
 * **Details**
 *
 * - Decision: `shouldRejectRetries` is true when at least `minRequests` requests were
 *   seen in the window and `retries / total > threshold`. With client budgets of 10%
 *   the retry share of healthy traffic stays below ≈ 9% (0.1 / 1.1), so the default
 *   threshold 0.1 means "clients are at their budgets or ignore them".
 * - The window and the decision are the kernel's (`@sluice/kernel/retry/RetryHistogram`);
 *   time is Effect's `Clock`.
 *
 * **Gotchas**
 *
 * - Attempt numbers come from callers. Record those of callers you do not trust with
 *   `recordUntrustedUnsafe`: they are counted apart and never decide.
 * - The `unsafe*` methods run outside any fiber, so their metrics go to the default
 *   `Metric.MetricRegistry`; `record` and `shouldRejectRetries` use the fiber's.
 *
 * @since 0.1.0
 */
import type { Options } from "@sluice/core"
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Metric from "effect/Metric"
import type * as Kernel from "@sluice/kernel/retry/RetryHistogram"
import * as internal from "./internal/retryHistogram.js"

/**
 * Options: `window` (default 10 s) in `buckets` (default 10); `maxAttempt` (default 3):
 * attempts at or above it share the last histogram bucket; `threshold`, a ratio in
 * `[0, 1]` (default 0.1); `minRequests` (default 20) below which it never rejects;
 * `name` tags its metrics (`histogram`).
 *
 * @since 0.1.0
 * @category models
 */
export interface RetryHistogramOptions {
  readonly window?: Duration.Input | undefined
  readonly buckets?: number | undefined
  readonly maxAttempt?: number | undefined
  readonly threshold?: number | undefined
  readonly minRequests?: number | undefined
  readonly name?: string | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ResolvedOptions {
  readonly window: Duration.Duration
  readonly buckets: number
  readonly maxAttempt: number
  readonly threshold: number
  readonly minRequests: number
  readonly name?: string | undefined
}

/**
 * The window's contents: requests by attempt number (`byAttempt[i]`, the last entry
 * counting `maxAttempt` and above), their total, how many were retries (attempt ≥ 1)
 * and the share of retries (0 when empty). `untrusted`: the requests recorded with
 * {@link Histogram.recordUntrustedUnsafe}, counted apart, not part of `total`, `retries` or
 * the decision.
 *
 * @since 0.1.0
 * @category models
 */
export interface Snapshot extends Kernel.Snapshot {}

/**
 * Requests from callers whose attempt numbers are not believed, by attempt
 * number as they claimed it.
 *
 * @since 0.2.0
 * @category models
 */
export interface UntrustedCounts extends Kernel.UntrustedCounts {}

/**
 * A retry histogram. The `unsafe*` methods take the clock reading (epoch millis
 * from Effect's `Clock`). Every method works unbound (`Effect.forEach(xs, histogram.record)`).
 *
 * @since 0.1.0
 * @since 0.2.0
 * @category models
 */
export interface Service {
  readonly options: ResolvedOptions
  /** Records one incoming request with its attempt number (malformed values count as 0). */
  readonly recordUnsafe: (nowMillis: number, attempt: number) => void
  /**
   * Records a request from a caller that is not trusted (see `@sluice/http`'s
   * `Trust`): kept apart (snapshot `untrusted`, metric tag `trusted=false`) and
   * never part of the decision, so that anonymous callers claiming to be retries
   * cannot make the server answer "don't retry" to others — nor, claiming first
   * tries, dilute the share of retries. @since 0.2.0
   */
  readonly recordUntrustedUnsafe: (nowMillis: number, attempt: number) => void
  readonly snapshotUnsafe: (nowMillis: number) => Snapshot
  readonly shouldRejectRetriesUnsafe: (nowMillis: number) => boolean
  readonly record: (attempt: number) => Effect.Effect<void>
  readonly snapshot: Effect.Effect<Snapshot>
  readonly shareOfRetries: Effect.Effect<number>
  /** Should the server answer "don't retry" now? Updates the share gauge. */
  readonly shouldRejectRetries: Effect.Effect<boolean>
}

/**
 * The service tag of a server's retry histogram.
 *
 * @since 0.1.0
 * @category tags
 */
export class RetryHistogram extends Context.Service<RetryHistogram, Service>()(
  "@sluice/retry/RetryHistogram"
) {}

/**
 * Builds a histogram, failing with `InvalidOptions` (naming the field) on bad options.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (options?: RetryHistogramOptions) => Effect.Effect<Service, Options.InvalidOptions> =
  internal.make

/**
 * Builds a histogram synchronously; throws `InvalidOptions`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe: (options?: RetryHistogramOptions) => Service = internal.makeUnsafe

/**
 * A Layer providing {@link RetryHistogram}.
 *
 * @example
 * ```ts
 * import { Errors } from "@sluice/core"
 * import { RetryHistogram } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * // In a request handler, with the attempt number read from the request:
 * const admit = (attemptHeader: string | undefined) =>
 *   Effect.gen(function* () {
 *     const histogram = yield* RetryHistogram.RetryHistogram
 *     const attempt = RetryHistogram.parseAttempt(attemptHeader)
 *     yield* histogram.record(attempt)
 *     if (attempt > 0 && (yield* histogram.shouldRejectRetries)) {
 *       return yield* new Errors.DontRetry({ reason: "server" })
 *     }
 *   })
 *
 * const program = admit("2").pipe(Effect.provide(RetryHistogram.layer({ threshold: 0.1 })))
 * // admitted: one request is below `minRequests` (20), too few to judge
 * Effect.runPromiseExit(program).then((exit) => console.log(String(exit))) // prints: Success(undefined)
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: RetryHistogramOptions = {}
): Layer.Layer<RetryHistogram, Options.InvalidOptions> => Layer.effect(RetryHistogram, internal.make(options))

/**
 * A Layer providing {@link RetryHistogram} with options read from a `Config`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<RetryHistogramOptions>
): Layer.Layer<RetryHistogram, Options.InvalidOptions | Config.ConfigError> =>
  Layer.effect(RetryHistogram, Effect.flatMap(config, internal.make))

/**
 * Parses an attempt number from a header value (or a number). Anything that is not
 * a plain non-negative integer of at most 8 characters — negative, fractional, `NaN`,
 * hostile strings — reads as 0, never throws.
 *
 * @example
 * ```ts
 * import { RetryHistogram } from "@sluice/retry"
 *
 * console.log(RetryHistogram.parseAttempt("2")) // prints: 2
 * console.log(RetryHistogram.parseAttempt("-1")) // prints: 0
 * console.log(RetryHistogram.parseAttempt("1e999")) // prints: 0
 * ```
 * @since 0.1.0
 * @category utils
 */
export const parseAttempt: (value: string | number | null | undefined) => number = internal.parseAttempt

/**
 * Histogram metrics: `sluice_retry_histogram_requests` (attribute `attempt`: "0", "1",
 * …, "3+", and `trusted: "false"` for untrusted callers),
 * `sluice_retry_histogram_retry_share` (gauge, set when a decision is evaluated) and
 * `sluice_retry_histogram_reject_decisions`; all with the attribute `histogram` when
 * the histogram has a `name`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads a metric, shown for its attribute names
 * import { RetryHistogram } from "@sluice/retry"
 * import { Metric } from "effect"
 *
 * const retries = Metric.value(
 *   Metric.withAttributes(RetryHistogram.metrics.requests, { histogram: "api", attempt: "1" })
 * )
 * ```
 * @since 0.1.0
 * @category metrics
 */
export const metrics: {
  readonly requests: Metric.Counter<number>
  readonly retryShare: Metric.Gauge<number>
  readonly rejectDecisions: Metric.Counter<number>
} = {
  requests: internal.requests.metric,
  retryShare: internal.retryShare.metric,
  rejectDecisions: internal.rejections.metric
}

/**
 * A per-client retry budget: retries may be at most `ratio` (default 10%) of the
 * requests seen over a sliding `window` (default 10 s), plus a floor of
 * `minRetriesPerSecond` (default 1/s, i.e. `minRetriesPerSecond × window` retries per
 * window) so that a quiet client can still retry.
 *
 * **Details**
 *
 * - The budget lives in a `RetryBudget` service built by a Layer and is keyed per
 *   client: every policy that names the same key shares one budget.
 * - A retry counts against the budget from the moment it is scheduled, so retries
 *   waiting in backoff already use it up. A denied retry becomes
 *   `DontRetry { reason: "budget" }` in `Retry.withRetry`.
 * - Admission rule, at the moment a retry is scheduled:
 *   `retriesInWindow + 1 ≤ ⌊ratio × requestsInWindow + minRetriesPerSecond × windowSeconds⌋`,
 *   computed exactly (the ratio as the decimal it is written as) when the floor
 *   `minRetriesPerSecond × windowSeconds` is a whole number. The rule is the kernel's
 *   (`@sluice/kernel/retry/RetryBudget`).
 * - Time is Effect's `Clock`, so a budget runs under `TestClock` and in the simulation.
 *
 * **Gotchas**
 *
 * - The number of keys is bounded (`maxKeys`, default 10 000, a `BoundedMap`); a key
 *   not looked up recently is forgotten first (CLOCK). A handle already held keeps
 *   working, but a later `forKey` of a forgotten key starts afresh: keep `maxKeys`
 *   above the live clients.
 * - Look a budget up once (`RetryBudget.forKey`) and pass the handle to the policy: a
 *   policy given a key looks it up on every run.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { Errors } from "@sluice/core"
 * import { Retry, RetryBudget } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * declare const call: Effect.Effect<string, Errors.Overloaded>
 *
 * const program = Effect.gen(function* () {
 *   const budget = yield* RetryBudget.forKey("backend-a")
 *   const retry = yield* Retry.make({ maxAttempts: 3, budget })
 *   const result = yield* retry.apply(call)
 *   const stats = yield* budget.stats // { requests, retries, allowed, available }
 *   return [result, stats] as const
 * }).pipe(Effect.provide(RetryBudget.layer({ ratio: 0.1, window: "10 seconds" })))
 * ```
 *
 * @since 0.1.0
 */
import type { Admission, Options } from "@sluice/core"
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Metric from "effect/Metric"
import * as internal from "./internal/retryBudget.js"

/**
 * Options: `ratio` in `[0, 1]` (default 0.1), `window` (default 10 s), `buckets` that
 * slice the window (default 10), `minRetriesPerSecond` (default 1), `maxKeys`
 * (default 10 000).
 *
 * @since 0.1.0
 * @category models
 */
export interface RetryBudgetOptions {
  readonly ratio?: number | undefined
  readonly window?: Duration.Input | undefined
  readonly buckets?: number | undefined
  readonly minRetriesPerSecond?: number | undefined
  readonly maxKeys?: number | undefined
}

/**
 * Options after decoding, with defaults filled in.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResolvedOptions {
  readonly ratio: number
  readonly window: Duration.Duration
  readonly buckets: number
  readonly minRetriesPerSecond: number
  readonly maxKeys: number
}

/**
 * What a budget currently holds: requests and retries in the window, retries
 * allowed in the window, and how many more retries it would grant now.
 *
 * @since 0.1.0
 * @category models
 */
export interface BudgetStats {
  readonly requests: number
  readonly retries: number
  readonly allowed: number
  readonly available: number
}

/**
 * The budget of one client key. The `unsafe*` methods take the clock reading (epoch
 * millis from Effect's `Clock`) for hot paths that already read it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Budget {
  readonly key: string
  /** Records one request (a first attempt). */
  readonly recordRequestUnsafe: (nowMillis: number) => void
  /** Grants and records one retry, or returns `false` when the budget is spent. */
  readonly tryWithdrawUnsafe: (nowMillis: number) => boolean
  /**
   * Gives back the retry granted at `withdrawnAtMillis`, one that never reached the backend
   * (the retry policy refunds a retry its own gates refused or that was abandoned before it
   * was sent): the budget bounds the load retries add, and that one added none.
   */
  readonly refundUnsafe: (withdrawnAtMillis: number, nowMillis: number) => void
  readonly statsUnsafe: (nowMillis: number) => BudgetStats
  readonly recordRequest: Effect.Effect<void>
  /** Grants and records one retry now; updates the grant / denial metrics. */
  readonly tryWithdraw: Effect.Effect<boolean>
  readonly stats: Effect.Effect<BudgetStats>
  /**
   * The budget's side of the admission protocol: every first try that enters counts
   * as a request (whatever its outcome: the budget is a share of what was asked). Its
   * refusals come from the retry policy, which withdraws each retry and gives up with
   * `DontRetry` ("budget") when none is left; only retried failures — dropped by a
   * backend, or marked retryable — ever withdraw.
   */
  readonly gate: Admission.Gate<true, never>
}

/**
 * The service: a bounded map from client key to {@link Budget}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly options: ResolvedOptions
  /** The budget of `key`, created on first use and shared afterwards. */
  readonly forKey: (key: string) => Budget
  /** How many keys are held. */
  readonly size: number
}

/**
 * The retry-budget service tag.
 *
 * @since 0.1.0
 * @category tags
 */
export class RetryBudget extends Context.Service<RetryBudget, Service>()("@sluice/retry/RetryBudget") {}

/**
 * Builds the service, failing with `InvalidOptions` (naming the field) on bad options.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (options?: RetryBudgetOptions) => Effect.Effect<Service, Options.InvalidOptions> =
  internal.make

/**
 * Builds the service synchronously; throws `InvalidOptions`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe: (options?: RetryBudgetOptions) => Service = internal.makeUnsafe

/**
 * A Layer providing {@link RetryBudget}.
 *
 * @example
 * ```ts
 * // snippet: compile-only — declares the call it wraps
 * import { Retry, RetryBudget } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * declare const call: Effect.Effect<string, Error>
 * const program = Effect.gen(function* () {
 *   const budget = yield* RetryBudget.forKey("backend-a")
 *   return yield* call.pipe(Retry.withRetry({ maxAttempts: 3, budget }))
 * }).pipe(Effect.provide(RetryBudget.layer({ ratio: 0.1, window: "10 seconds", minRetriesPerSecond: 1 })))
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layer: (options?: RetryBudgetOptions) => Layer.Layer<RetryBudget, Options.InvalidOptions> =
  internal.layer

/**
 * A Layer providing {@link RetryBudget} with options read from a `Config`.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads its options from environment variables
 * import { RetryBudget } from "@sluice/retry"
 * import { Config } from "effect"
 *
 * const layer = RetryBudget.layerConfig(
 *   Config.all({ ratio: Config.Number("RETRY_RATIO"), window: Config.Duration("RETRY_WINDOW") })
 * )
 * ```
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: (
  config: Config.Config<RetryBudgetOptions>
) => Layer.Layer<RetryBudget, Options.InvalidOptions | Config.ConfigError> = internal.layerConfig

/**
 * The budget of `key` from the service in context. Look it up once (e.g. when a
 * client is built) and pass the handle to `Retry.withRetry({ budget })`.
 *
 * @since 0.1.0
 * @category utils
 */
export const forKey: (key: string) => Effect.Effect<Budget, never, RetryBudget> = internal.forKey

/**
 * Budget metrics: `sluice_retry_budget_withdrawals` (retries granted),
 * `sluice_retry_budget_denials` (retries refused) and `sluice_retry_budget_refunds`
 * (granted retries given back because they never left), with the attribute `policy` when
 * the policy that asked has a `name`. `Budget.tryWithdraw` updates them without it;
 * the `unsafe*` methods update none.
 *
 * @example
 * ```ts
 * // snippet: compile-only — reads a metric, shown for its attribute names
 * import { RetryBudget } from "@sluice/retry"
 * import { Metric } from "effect"
 *
 * const denied = Metric.value(Metric.withAttributes(RetryBudget.metrics.denials, { policy: "backend-a" }))
 * ```
 * @since 0.1.0
 * @category metrics
 */
export const metrics: {
  readonly withdrawals: Metric.Counter<number>
  readonly denials: Metric.Counter<number>
  readonly refunds: Metric.Counter<number>
} = {
  withdrawals: internal.withdrawals.metric,
  denials: internal.denials.metric,
  refunds: internal.refunds.metric
}

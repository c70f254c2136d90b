/**
 * The client stack, fused: `Retry.withRetry` (attempts, backoff, retry budget) around
 * `AdaptiveThrottle` around `ConcurrencyLimiter`, as one combinator whose success
 * path costs about as much as one of them.
 *
 * `stack.run(effect)` behaves exactly as the composition
 *
 * ```ts
 * Retry.unsafeMake(retry).apply(throttle.withThrottle(limiter.withLimiter(effect, key), key))
 * ```
 *
 * built from the same service instances (same attempts, same outcomes, same
 * budget, throttle and limiter state, same output error type), but the first try
 * does all of its bookkeeping in one synchronous step: one `Clock` read, the budget
 * and throttle request counts, the throttle's admission check and, when a permit
 * is free, the limiter's grant; the effect then runs in one uninterruptible region
 * whose exit handler releases the permit (with its round-trip time) and settles
 * the throttle. The full machinery (the throttle's random draw, the limiter's queue,
 * schedules and the retry loop) is entered only when it is needed: the throttle's
 * probability is above zero, no permit is free, the try fails, or the stack runs
 * inside another retry layer. An interrupted call always gives its permit back.
 *
 * `stack.composed(effect)` is the reference composition itself (for comparisons).
 *
 * @since 0.1.0
 */
import type { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import type { Errors, Options } from "@sluice/core"
import type { Retry } from "@sluice/retry"
import type * as Effect from "effect/Effect"
import * as internal from "./internal/clientStack.js"

/**
 * What one attempt can fail with: the effect's errors, `Throttled` from the
 * throttle, `Overloaded` from the limiter.
 *
 * @since 0.1.0
 * @category errors
 */
export type AttemptError<E> = E | Errors.Throttled | Errors.Overloaded

/**
 * The stack's error type: that of `Retry.withRetry` over an attempt, so retryable
 * errors (`Overloaded` among them) come out as `DontRetry`.
 *
 * @example
 * ```ts
 * import type { ClientStack } from "@sluice/http"
 *
 * // Errors.Throttled | Errors.DontRetry | Error
 * type E = ClientStack.ClientStackError<Error>
 * ```
 * @since 0.1.0
 * @category errors
 */
export type ClientStackError<E> = Retry.PolicyError<AttemptError<E>>

/**
 * Options of {@link make}: the backend `key` (the throttle and limiter key, e.g.
 * the host), the retry options (`Retry.unsafeMake`: `maxAttempts`, `schedule`, a
 * `RetryBudget.Budget` handle, `isRetryable`, `maxRetryAfter`, `name`), and the
 * throttle and limiter services, the same instances their Layers provide.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClientStackOptions {
  readonly key: string
  readonly retry?: Retry.MakeOptions | undefined
  readonly throttle: AdaptiveThrottle.Service
  readonly limiter: ConcurrencyLimiter.Service
}

/**
 * Options of {@link fromContext}: the services come from context, and the retry
 * budget may be named by client key (then `RetryBudget` is required too).
 *
 * @since 0.1.0
 * @category models
 */
export interface FromContextOptions {
  readonly key: string
  readonly retry?: Retry.PolicyOptions | undefined
}

/**
 * A built stack for one backend key.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClientStack {
  readonly key: string
  readonly retry: Retry.Policy
  readonly throttle: AdaptiveThrottle.Service
  readonly limiters: ConcurrencyLimiter.Service
  /** Runs `effect` through the stack (the fused fast path). */
  run<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, ClientStackError<E>, R>
  /** The same, composed from the public combinators (the reference semantics). */
  composed<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, ClientStackError<E>, R>
  /** One attempt, through the throttle and the limiter only. */
  attempt<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, AttemptError<E>, R>
}

/**
 * Builds a stack from service instances; throws `InvalidOptions` naming the field.
 *
 * @example
 * ```ts
 * import { AdaptiveThrottle, ConcurrencyLimiter, CongestionWindow } from "@sluice/adaptive"
 * import { ClientStack } from "@sluice/http"
 * import { Backoff, RetryBudget } from "@sluice/retry"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const stack = ClientStack.make({
 *     key: "api.example.com",
 *     retry: { maxAttempts: 3, schedule: Backoff.defaultSchedule, budget: yield* RetryBudget.forKey("my-client") },
 *     throttle: yield* AdaptiveThrottle.AdaptiveThrottle,
 *     limiter: yield* ConcurrencyLimiter.ConcurrencyLimiter
 *   })
 *   return yield* stack.run(Effect.succeed("response"))
 * }).pipe(
 *   Effect.provide([
 *     RetryBudget.layer(),
 *     AdaptiveThrottle.layer(),
 *     ConcurrencyLimiter.layer({ algorithm: CongestionWindow.factory() })
 *   ])
 * )
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const make: (options: ClientStackOptions) => ClientStack = internal.make

/**
 * Builds a stack from the `AdaptiveThrottle` and `ConcurrencyLimiter` services in
 * context (and `RetryBudget` when the budget is named by key).
 *
 * @example
 * ```ts
 * import { ClientStack } from "@sluice/http"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const stack = yield* ClientStack.fromContext({ key: "api.example.com", retry: { maxAttempts: 3, budget: "my-client" } })
 *   return yield* stack.run(Effect.succeed("response"))
 * })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const fromContext: <const O extends FromContextOptions>(
  options: O
) => Effect.Effect<
  ClientStack,
  Options.InvalidOptions,
  | AdaptiveThrottle.AdaptiveThrottle
  | ConcurrencyLimiter.ConcurrencyLimiter
  | (O extends { readonly retry: infer P } ? Retry.PolicyContext<P> : never)
> = internal.fromContext as any

/**
 * Runs an effect through a stack, data-first or data-last.
 *
 * @example
 * ```ts
 * import { ClientStack } from "@sluice/http"
 * import { Effect } from "effect"
 *
 * declare const stack: ClientStack.ClientStack
 * const call = Effect.succeed(1).pipe(ClientStack.run(stack))
 * ```
 * @since 0.1.0
 * @category utils
 */
export const run: {
  (stack: ClientStack): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, ClientStackError<E>, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, stack: ClientStack): Effect.Effect<A, ClientStackError<E>, R>
} = internal.run

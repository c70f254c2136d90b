import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import type { Errors } from "@sluice/core"
import { Criticality, Options } from "@sluice/core"
import { Retry, RetryBudget } from "@sluice/retry"
import type * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { dual } from "effect/Function"
import * as Predicate from "effect/Predicate"
import type * as CS from "../ClientStack.js"

const invalid = (field: string, expected: string) =>
  new Options.InvalidOptions({
    module: "ClientStack",
    message: `ClientStack: invalid options\n└─ ["${field}"]\n   └─ ${expected}`
  })

const hasMethod = (u: unknown, name: string): boolean =>
  Predicate.isObject(u) && typeof (u as Record<string, unknown>)[name] === "function"

/**
 * Builds the handlers object from functions passed as arguments: a function written
 * as an object property gets a `name` defined on every call under transpilers that
 * keep names (esbuild's `keepNames`, used by tsx), which costs more than the call.
 */
const handlers = <A, E, X, Y, R>(
  onSuccess: (a: A) => Effect.Effect<X, Y, R>,
  onFailure: (cause: Cause.Cause<E>) => Effect.Effect<X, Y, R>
) => ({ onSuccess, onFailure })

class ClientStackImpl implements CS.ClientStack {
  constructor(
    readonly key: string,
    readonly retry: Retry.Policy,
    readonly throttle: AdaptiveThrottle.Service,
    readonly limiters: ConcurrencyLimiter.Service
  ) {}

  /** One attempt through the throttle and the limiter, as the composed combinators run it. */
  attempt<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, CS.AttemptError<E>, R> {
    return this.throttle.run(this.key, this.limiters.run(this.key, effect))
  }

  composed<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, CS.ClientStackError<E>, R> {
    return this.retry.apply(this.attempt(effect))
  }

  run<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, CS.ClientStackError<E>, R> {
    // The permit is taken inside the uninterruptible region, so no interruption can
    // fall between granting it and installing the handler that gives it back.
    return Effect.uninterruptibleMask((restore): Effect.Effect<A, CS.ClientStackError<E>, R> => {
      // The mask's body runs on the fiber (which the flag change just made current):
      // reading it here saves a `withFiberRuntime` step.
      const current = Fiber.getCurrentFiber()
      if (current._tag === "None") return restore(this.composed(effect))
      const fiber = current.value
      // Nested in another retry layer: Retry.policy would run the first try with
      // `Effect.locally`; leave that case to the composed stack.
      if (fiber.getFiberRef(Retry.currentAttempt) !== 0) return restore(this.composed(effect))
      const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
      const now = clock.unsafeCurrentTimeMillis()
      const level = fiber.getFiberRef(Criticality.currentCriticality)
      this.retry.unsafeRecordFirstAttempt(now)
      // In the composed order: the throttle decides (and counts) first, then the limiter.
      const admission = this.throttle.unsafeTryAdmit(this.key, level, now)
      if (admission === undefined) return restore(this.firstTry(effect))
      const limiter = this.limiters.unsafeGet(this.key)
      const permit = limiter.unsafeTryAcquire(level, now, clock)
      if (permit === undefined) return restore(this.firstTryQueued(effect, limiter, admission))
      return Effect.matchCauseEffect(
        restore(effect),
        handlers(
          (a: A) => {
            limiter.unsafeRelease(permit, undefined)
            this.throttle.unsafeSettle(admission, undefined)
            return Effect.succeed(a)
          },
          (cause: Cause.Cause<E>) => {
            limiter.unsafeRelease(permit, cause)
            this.throttle.unsafeSettle(admission, cause)
            return restore(this.afterFailure(effect, cause))
          }
        )
      )
    })
  }

  /** The first try when the fast path does not apply (the retry's bookkeeping is done). */
  private firstTry<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, CS.ClientStackError<E>, R> {
    const attempt = this.attempt(effect)
    return Effect.catchAll(attempt, (error) => this.retry.retryAfterFailure(attempt, error))
  }

  /**
   * The first try when the throttle admitted it but no permit is free: the limiter's
   * queue, then the throttle's settlement, as `throttle.run` does around it.
   */
  private firstTryQueued<A, E, R>(
    effect: Effect.Effect<A, E, R>,
    limiter: ConcurrencyLimiter.Limiter,
    admission: AdaptiveThrottle.Admission
  ): Effect.Effect<A, CS.ClientStackError<E>, R> {
    const settled = Effect.matchCauseEffect(
      limiter.run(effect),
      handlers(
        (a: A) => {
          this.throttle.unsafeSettle(admission, undefined)
          return Effect.succeed(a)
        },
        (cause: Cause.Cause<E | Errors.Overloaded>) => {
          this.throttle.unsafeSettle(admission, cause)
          return Effect.failCause(cause)
        }
      )
    )
    return Effect.catchAll(settled, (error) => this.retry.retryAfterFailure(this.attempt(effect), error))
  }

  /** What `Effect.catchAll` inside `Retry.policy` does with the cause of a failed first try. */
  private afterFailure<A, E, R>(
    effect: Effect.Effect<A, E, R>,
    cause: Cause.Cause<E>
  ): Effect.Effect<A, CS.ClientStackError<E>, R> {
    return Effect.catchAll(Effect.failCause(cause), (error) =>
      this.retry.retryAfterFailure(this.attempt(effect), error)
    )
  }
}

/** @internal */
export const make = (options: CS.ClientStackOptions): CS.ClientStack => {
  if (!Predicate.isObject(options)) throw invalid("options", "expected an object")
  if (typeof options.key !== "string" || options.key.length === 0) {
    throw invalid("key", "expected a non-empty string (the backend, e.g. the host)")
  }
  if (!hasMethod(options.throttle, "unsafeTryAdmit")) {
    throw invalid("throttle", "expected an AdaptiveThrottle.Service")
  }
  if (!hasMethod(options.limiter, "unsafeGet")) {
    throw invalid("limiter", "expected a ConcurrencyLimiter.Service")
  }
  return new ClientStackImpl(options.key, Retry.make(options.retry), options.throttle, options.limiter)
}

/** @internal */
export const fromContext = (
  options: CS.FromContextOptions
): Effect.Effect<CS.ClientStack, Options.InvalidOptions, any> =>
  Effect.gen(function* () {
    const throttle = yield* AdaptiveThrottle.AdaptiveThrottle
    const limiter = yield* ConcurrencyLimiter.ConcurrencyLimiter
    const retry = options.retry ?? {}
    const budget =
      typeof retry.budget === "string" ? (yield* RetryBudget.RetryBudget).forKey(retry.budget) : retry.budget
    return yield* Effect.suspend(() => {
      try {
        const { budget: _named, ...rest } = retry
        const resolved: Retry.MakeOptions = budget === undefined ? rest : { ...rest, budget }
        return Effect.succeed(make({ key: options.key, retry: resolved, throttle, limiter }))
      } catch (error) {
        return error instanceof Options.InvalidOptions ? Effect.fail(error) : Effect.die(error)
      }
    })
  })

/** @internal */
export const run = dual(
  2,
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    stack: CS.ClientStack
  ): Effect.Effect<A, CS.ClientStackError<E>, R> => stack.run(self)
)

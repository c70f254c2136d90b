import { AdaptiveThrottle, ConcurrencyLimiter } from "@sluice/adaptive"
import { Options } from "@sluice/core"
import { Retry, RetryBudget } from "@sluice/retry"
import * as Effect from "effect/Effect"
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

class ClientStackImpl implements CS.ClientStack {
  /** The fused path: one step through the retry's first-try bookkeeping, the throttle and the limiter. */
  readonly run: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, CS.ClientStackError<E>, R>
  constructor(
    readonly key: string,
    readonly retry: Retry.Policy,
    readonly throttle: AdaptiveThrottle.Service,
    readonly limiters: ConcurrencyLimiter.Service
  ) {
    // Safe to pass unbound (`call.pipe(stack.run)`): the guard is the function itself.
    this.run = retry.around([throttle.gate(key), limiters.gate(key)]) as any
  }

  /** One attempt through the throttle and the limiter, as the composed combinators run it. */
  readonly attempt = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, CS.AttemptError<E>, R> =>
    this.throttle.withThrottle(this.limiters.withLimiter(effect, this.key), this.key)

  readonly composed = <A, E, R>(
    effect: Effect.Effect<A, E, R>
  ): Effect.Effect<A, CS.ClientStackError<E>, R> => this.retry.apply(this.attempt(effect))
}

/** @internal */
export const make = (options: CS.ClientStackOptions): CS.ClientStack => {
  if (!Predicate.isObject(options)) throw invalid("options", "expected an object")
  if (typeof options.key !== "string" || options.key.length === 0) {
    throw invalid("key", "expected a non-empty string (the backend, e.g. the host)")
  }
  if (!hasMethod(options.throttle, "gate")) {
    throw invalid("throttle", "expected an AdaptiveThrottle.Service")
  }
  if (!hasMethod(options.limiter, "unsafeGet")) {
    throw invalid("limiter", "expected a ConcurrencyLimiter.Service")
  }
  return new ClientStackImpl(options.key, Retry.unsafeMake(options.retry), options.throttle, options.limiter)
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

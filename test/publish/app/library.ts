// a small library built on Sluice, with inferred (not annotated) types
import { Errors } from "@sluice/core"
import { Backoff, Retry, RetryBudget } from "@sluice/retry"
import { ConcurrencyLimiter, CongestionWindow } from "@sluice/adaptive"
import { SluiceHttpClient } from "@sluice/http"
import { Effect, Layer } from "effect"

export * as Generated from "./exports.js"

export const withRetries = <A, E, R>(effect: Effect.Effect<A, E, R>, maxAttempts?: number) =>
  Effect.flatMap(RetryBudget.forKey("lib"), (budget) =>
    Retry.makeUnsafe({
      maxAttempts,
      budget,
      schedule: Backoff.exponential({ base: "10 millis" }).pipe(Backoff.jitter("full"))
    }).apply(effect)
  )
export const busy = Effect.fail(new Errors.Overloaded({ reason: "busy" }))
export const budgetLayer = (ratio?: number) => RetryBudget.layer({ ratio })
export const limiterLayer = ConcurrencyLimiter.layer({ algorithm: CongestionWindow.factory() })
export const clientLayer = SluiceHttpClient.layer({ maxAttempts: 3 })
export const all = Layer.merge(budgetLayer(0.1), limiterLayer)

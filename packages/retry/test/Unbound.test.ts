import { describe, expect, it } from "@effect/vitest"
import { Retry, RetryBudget, RetryHistogram } from "@sluice/retry"
import { Effect } from "effect"
import { callAllUnbound } from "../../core/test/unbound.js"

describe("unbound service methods", () => {
  it.effect("RetryBudget service and budgets", () =>
    Effect.gen(function* () {
      const service = yield* RetryBudget.make()
      const budgets = yield* Effect.forEach(["a", "b"], (key) => Effect.sync(() => service.forKey(key)))
      const forKey = service.forKey
      expect(forKey("a")).toBe(budgets[0])
      yield* callAllUnbound(service, { forKey: ["c"] })
      const budget = budgets[0]!
      const withdraw = budget.tryWithdrawUnsafe
      const record = budget.recordRequestUnsafe
      record(0)
      expect(typeof withdraw(0)).toBe("boolean")
      yield* callAllUnbound(budget, { recordRequestUnsafe: [0], tryWithdrawUnsafe: [0], statsUnsafe: [0] })
    })
  )

  it.effect("RetryHistogram", () =>
    Effect.gen(function* () {
      const histogram = yield* RetryHistogram.make()
      yield* Effect.forEach([0, 1, 2], histogram.record)
      expect((yield* histogram.snapshot).total).toBe(3)
      yield* callAllUnbound(histogram, {
        record: [0],
        recordUnsafe: [0, 0],
        recordUntrustedUnsafe: [0, 0],
        snapshotUnsafe: [0],
        shouldRejectRetriesUnsafe: [0]
      })
    })
  )

  it.effect("Retry.Policy and the RetryEvents service", () =>
    Effect.gen(function* () {
      const policy = yield* Retry.make({ maxAttempts: 2 })
      expect(yield* Effect.succeed(1).pipe(policy.apply)).toBe(1)
      yield* callAllUnbound(policy, { apply: [Effect.succeed(1)], around: [[]] })
      const events = yield* Retry.RetryEvents
      yield* callAllUnbound(events, {
        publishUnsafe: [
          { _tag: "GaveUp", policy: undefined, reason: "attempts", attempts: 1, error: 0, at: 0 }
        ]
      })
    }).pipe(Effect.provide(Retry.layerEvents()))
  )
})

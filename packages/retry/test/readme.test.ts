// The README example, run under TestClock with its console output captured.
import { Errors } from "@sluice/core"
import { Backoff, Retry, RetryBudget } from "@sluice/retry"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"

describe("README example", () => {
  it.effect("runs and prints what the README says", () =>
    Effect.gen(function* () {
      const lines: Array<unknown> = []
      const console = { log: (...args: Array<unknown>) => lines.push(args.length === 1 ? args[0] : args) }

      // --- README ---
      const backend = Effect.flatMap(Retry.attempt, (attempt) =>
        attempt < 2
          ? Effect.fail(new Errors.Overloaded({ reason: "busy" }))
          : Effect.succeed(`served on attempt ${attempt}`)
      )

      const program = Effect.gen(function* () {
        const budget = yield* RetryBudget.forKey("backend-a")
        const retry = yield* Retry.make({
          maxAttempts: 3,
          budget,
          schedule: Backoff.exponential({ base: "20 millis", max: "1 second" }).pipe(Backoff.jitter("full")),
          name: "backend-a"
        })
        const call = retry.apply(backend)
        console.log(yield* call)

        const alwaysBusy = Effect.fail(new Errors.Overloaded({ reason: "busy" }))
        const outer = yield* Retry.make({ maxAttempts: 3 })
        const twoLayers = alwaysBusy.pipe(retry.apply, outer.apply)
        const error = yield* Effect.flip(twoLayers)
        console.log(error._tag, error.reason, error.attempts) // DontRetry attempts 3
        console.log(yield* budget.stats)
      }).pipe(Effect.provide(RetryBudget.layer({ ratio: 0.1, window: "10 seconds", minRetriesPerSecond: 1 })))
      // --- end README ---

      const fiber = yield* Effect.forkChild(program)
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
      expect(lines).toEqual([
        "served on attempt 2",
        ["DontRetry", "attempts", 3],
        { requests: 2, retries: 4, allowed: 10.2, available: 6 }
      ])
    })
  )
})

import { Errors } from "@sluice/core"
import { Retry } from "@sluice/retry"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Fiber, Ref } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"

type Outcome = "ok" | "overloaded" | "quotaSoon" | "quotaLate" | "throttled" | "plain"

const errorOf = (outcome: Exclude<Outcome, "ok">) => {
  switch (outcome) {
    case "overloaded":
      return new Errors.Overloaded({ reason: "busy" })
    case "quotaSoon":
      return new Errors.QuotaExceeded({ tier: "t", limit: 1, remaining: 0, retryAfter: Duration.seconds(1) })
    case "quotaLate":
      return new Errors.QuotaExceeded({ tier: "t", limit: 1, remaining: 0, retryAfter: Duration.hours(1) })
    case "throttled":
      return new Errors.Throttled({ key: "k" })
    case "plain":
      return "plain" as const
  }
}

/** What the policy must do, computed without Effect. */
const model = (outcomes: ReadonlyArray<Outcome>, maxAttempts: number) => {
  for (let i = 0; ; i++) {
    const outcome = outcomes[i] ?? "ok"
    const calls = i + 1
    if (outcome === "ok") return { calls, result: "success" }
    if (outcome === "throttled" || outcome === "plain") return { calls, result: outcome }
    if (outcome === "quotaLate") return { calls, result: "DontRetry:not-retryable" }
    if (calls >= maxAttempts) return { calls, result: "DontRetry:attempts" }
  }
}

describe("Retry.withRetry model", () => {
  it("matches a pure model on random outcome sequences", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.constantFrom<Outcome>("ok", "overloaded", "quotaSoon", "quotaLate", "throttled", "plain"),
          {
            maxLength: 6
          }
        ),
        fc.integer({ min: 1, max: 5 }),
        async (outcomes, maxAttempts) => {
          const program = Effect.gen(function* () {
            const calls = yield* Ref.make(0)
            const attempts = yield* Ref.make<ReadonlyArray<number>>([])
            const effect = Effect.gen(function* () {
              const i = yield* Ref.getAndUpdate(calls, (n) => n + 1)
              const attempt = yield* Retry.attempt
              yield* Ref.update(attempts, (xs) => [...xs, attempt])
              const outcome = outcomes[i] ?? "ok"
              if (outcome === "ok") return "success"
              return yield* Effect.fail(errorOf(outcome))
            })
            const fiber = yield* Effect.forkChild(
              effect.pipe(Retry.withRetry({ maxAttempts, maxRetryAfter: "30 seconds" }))
            )
            yield* TestClock.adjust("10 minutes")
            const exit = yield* Fiber.await(fiber)
            const result = Exit.match(exit, {
              onSuccess: (value) => value,
              onFailure: (cause) => {
                const error = Cause.squash(cause) as any
                if (error === "plain") return "plain"
                if (error._tag === "Throttled") return "throttled"
                if (error._tag === "DontRetry") return `DontRetry:${error.reason}`
                return `unexpected ${String(error._tag)}`
              }
            })
            return { calls: yield* Ref.get(calls), result, attempts: yield* Ref.get(attempts) }
          })
          const actual = await Effect.runPromise(program.pipe(Effect.provide(TestClock.layer())))
          const expected = model(outcomes, maxAttempts)
          expect({ calls: actual.calls, result: actual.result }).toEqual(expected)
          expect(actual.attempts).toEqual(Array.from({ length: expected.calls }, (_, i) => i))
        }
      ),
      { numRuns: 100 }
    )
  })
})

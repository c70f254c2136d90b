import { Errors } from "@sluice/core"
import { Retry, RetryBudget } from "@sluice/retry"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Schedule, Tracer } from "effect"

/** An in-memory tracer: every span it starts, in order. */
const recording = () => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span(options) {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  return { spans, tracer }
}

const overloaded = new Errors.Overloaded({ reason: "busy" })

describe("Retry spans", () => {
  it.effect("a retry the budget refuses fails inside sluice.retry.give_up, with its reason", () =>
    Effect.gen(function* () {
      const { spans, tracer } = recording()
      // no retry allowed at all: the first retry is refused
      const budget = RetryBudget.makeUnsafe({ ratio: 0.01, minRetriesPerSecond: 0 }).forKey("spans")
      const exit = yield* Effect.fail(overloaded).pipe(
        Retry.withRetry({ name: "orders", maxAttempts: 3, schedule: Schedule.spaced("1 millis"), budget }),
        Effect.withSpan("call"),
        Effect.provideService(Tracer.Tracer, tracer),
        Effect.exit
      )
      expect(Exit.isFailure(exit)).toBe(true)
      const giveUp = spans.find((span) => span.name === "sluice.retry.give_up")
      expect(giveUp).toBeDefined()
      expect(Object.fromEntries(giveUp!.attributes)).toEqual({
        "sluice.retry.reason": "budget",
        "sluice.retry.attempts": 1,
        "sluice.retry.policy": "orders"
      })
      // a child of the caller's span, ended as a failure
      expect(giveUp!.parent._tag === "Some" && (giveUp!.parent.value as Tracer.Span).name).toBe("call")
      expect(giveUp!.status._tag).toBe("Ended")
      expect(
        giveUp!.status._tag === "Ended" && Exit.isFailure(giveUp!.status.exit as Exit.Exit<unknown, unknown>)
      ).toBe(true)
      // no attempt span: nothing was retried
      expect(spans.filter((span) => span.name === "sluice.retry.attempt")).toEqual([])
    })
  )

  it.live("retries run in sluice.retry.attempt spans and the give-up after them names its attempts", () =>
    Effect.gen(function* () {
      const { spans, tracer } = recording()
      yield* Effect.fail(overloaded).pipe(
        Retry.withRetry({ maxAttempts: 3, schedule: Schedule.spaced("1 millis") }),
        Effect.provideService(Tracer.Tracer, tracer),
        Effect.exit
      )
      expect(spans.map((span) => span.name)).toEqual([
        "sluice.retry.attempt",
        "sluice.retry.attempt",
        "sluice.retry.give_up"
      ])
      expect(spans[2]!.attributes.get("sluice.retry.reason")).toBe("attempts")
      expect(spans[2]!.attributes.get("sluice.retry.attempts")).toBe(3)
      // an unnamed policy: no policy attribute
      expect(spans[2]!.attributes.has("sluice.retry.policy")).toBe(false)
    })
  )

  it.effect("a first try that succeeds opens no span", () =>
    Effect.gen(function* () {
      const { spans, tracer } = recording()
      yield* Effect.succeed(1).pipe(
        Retry.withRetry({ maxAttempts: 3 }),
        Effect.provideService(Tracer.Tracer, tracer)
      )
      expect(spans).toEqual([])
    })
  )
})

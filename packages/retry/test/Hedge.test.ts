import { Admission, Errors } from "@sluice/core"
import { Hedge, Retry, RetryBudget } from "@sluice/retry"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Metric } from "effect"
import { TestClock } from "effect/testing"

/** One attempt's script: how long it takes and how it ends. */
interface Step {
  readonly millis: number
  readonly fail?: unknown
}

/**
 * A call whose n-th started attempt follows `steps[n]`; it records what each attempt saw (its
 * attempt number, start time) and how it ended.
 */
const scripted = (steps: ReadonlyArray<Step>) => {
  const log: Array<{ attempt: number; at: number; end?: "done" | "failed" | "interrupted" }> = []
  const call = Effect.gen(function* () {
    const index = log.length
    const step = steps[Math.min(index, steps.length - 1)]!
    const entry: (typeof log)[number] = {
      attempt: yield* Retry.currentAttempt,
      at: yield* Clock.currentTimeMillis
    }
    log.push(entry)
    yield* Effect.sleep(step.millis).pipe(
      Effect.onInterrupt(() => Effect.sync(() => (entry.end = "interrupted")))
    )
    if (step.fail !== undefined) {
      entry.end = "failed"
      return yield* Effect.fail(step.fail as Errors.Overloaded)
    }
    entry.end = "done"
    return index
  })
  return { call, log }
}

/** Runs `effect` to its end in virtual time; answers its exit and the virtual time it took. */
const inVirtualTime = <A, E>(effect: Effect.Effect<A, E>, millis = 10_000) =>
  Effect.gen(function* () {
    const start = yield* Clock.currentTimeMillis
    let end = start
    const fiber = yield* Effect.forkChild(
      Effect.exit(
        Effect.ensuring(
          effect,
          Effect.flatMap(Clock.currentTimeMillis, (t) => Effect.sync(() => (end = t)))
        )
      )
    )
    yield* TestClock.adjust(millis)
    const exit = yield* Fiber.join(fiber)
    return { exit, took: end - start }
  })

const overloaded = new Errors.Overloaded({ reason: "busy" })

describe("Hedge", () => {
  it.effect("sends a hedge after the delay; the first success wins and the loser is interrupted", () =>
    Effect.gen(function* () {
      const { call, log } = scripted([{ millis: 1_000 }, { millis: 10 }])
      const hedge = yield* Hedge.make({
        policy: yield* Retry.make({ maxAttempts: 1 }),
        delay: 100,
        minSamples: 0,
        name: "win"
      })
      const { exit, took } = yield* inVirtualTime(hedge.apply(call))
      expect(exit._tag === "Success" && exit.value).toBe(1)
      expect(took).toBe(110)
      // One loser cancelled, one hedge sent and won; a call the primary wins cancels nothing.
      yield* inVirtualTime(hedge.apply(scripted([{ millis: 10 }]).call))
      const count = (metric: typeof Hedge.metrics.sent) =>
        Effect.map(Metric.value(Metric.withAttributes(metric, { policy: "win" })), (state) => state.count)
      expect(yield* count(Hedge.metrics.cancelled)).toBe(1)
      expect(yield* count(Hedge.metrics.sent)).toBe(1)
      expect(yield* count(Hedge.metrics.won)).toBe(1)
      expect(log.map((e) => [e.attempt, e.at % 100_000, e.end])).toEqual([
        [0, 0, "interrupted"],
        [1, 100, "done"]
      ])
    })
  )

  it.effect("sends no hedge when the call ends before the delay, and up to maxHedges, one delay apart", () =>
    Effect.gen(function* () {
      const fast = scripted([{ millis: 50 }])
      const policy = yield* Retry.make({ maxAttempts: 1 })
      const hedge = yield* Hedge.make({ policy, delay: 100, minSamples: 0, maxHedges: 2 })
      yield* inVirtualTime(hedge.apply(fast.call))
      expect(fast.log.length).toBe(1)
      const slow = scripted([{ millis: 1_000 }, { millis: 1_000 }, { millis: 1_000 }, { millis: 10 }])
      const { exit, took } = yield* inVirtualTime(hedge.apply(slow.call))
      expect(exit._tag === "Success" && exit.value).toBe(0)
      expect(took).toBe(1_000)
      expect(slow.log.map((e) => [e.attempt, e.end])).toEqual([
        [0, "done"],
        [1, "interrupted"],
        [2, "interrupted"]
      ])
    })
  )

  it.effect("sends no hedge once the retry budget is spent", () =>
    Effect.gen(function* () {
      const budgets = yield* RetryBudget.make({ ratio: 0, minRetriesPerSecond: 0 })
      const policy = yield* Retry.make({ maxAttempts: 1, budget: budgets.forKey("spent") })
      const hedge = yield* Hedge.make({ policy, delay: 100, minSamples: 0, name: "spent" })
      const { call, log } = scripted([{ millis: 1_000 }, { millis: 10 }])
      const { took } = yield* inVirtualTime(hedge.apply(call))
      expect(took).toBe(1_000)
      expect(log.length).toBe(1)
      const refused = yield* Metric.value(
        Metric.withAttributes(Hedge.metrics.refused, { policy: "spent", reason: "budget" })
      )
      expect(refused.count).toBe(1)
    })
  )

  it.effect("a hedge withdraws from the budget its policy's retries spend", () =>
    Effect.gen(function* () {
      // ratio 0 with a reserve of two retries in the window: two hedges, then none.
      const budgets = yield* RetryBudget.make({ ratio: 0, minRetriesPerSecond: 0.2, window: "10 seconds" })
      const budget = budgets.forKey("one")
      const hedge = yield* Hedge.make({
        policy: yield* Retry.make({ maxAttempts: 1, budget }),
        delay: 100,
        minSamples: 0
      })
      const first = scripted([{ millis: 1_000 }, { millis: 10 }])
      expect((yield* inVirtualTime(hedge.apply(first.call), 2_000)).took).toBe(110)
      const second = scripted([{ millis: 1_000 }, { millis: 10 }])
      expect((yield* inVirtualTime(hedge.apply(second.call), 2_000)).took).toBe(110)
      const third = scripted([{ millis: 1_000 }, { millis: 10 }])
      expect((yield* inVirtualTime(hedge.apply(third.call), 2_000)).took).toBe(1_000)
      expect((yield* budget.stats).retries).toBe(2)
    })
  )

  it.effect("a failure stops hedging: a don't-retry from a hedge, a retryable failure of the primary", () =>
    Effect.gen(function* () {
      const policy = yield* Retry.make({ maxAttempts: 3 })
      const hedge = yield* Hedge.make({ policy, delay: 100, minSamples: 0, maxHedges: 3 })
      // Hedge 1 hears "don't retry" at 150: hedges 2 and 3 are not sent; the primary wins at 1000.
      const dontRetry = new Errors.DontRetry({ reason: "server", cause: overloaded })
      const a = scripted([{ millis: 1_000 }, { millis: 50, fail: dontRetry }, { millis: 10 }])
      const ra = yield* inVirtualTime(hedge.apply(a.call))
      expect(ra.exit._tag === "Success" && ra.exit.value).toBe(0)
      expect(a.log.map((e) => e.attempt)).toEqual([0, 1])
      // The primary's first try is refused at 50 and retried after its backoff: no hedge meanwhile.
      const b = scripted([{ millis: 50, fail: overloaded }, { millis: 10 }])
      const rb = yield* inVirtualTime(hedge.apply(b.call))
      expect(rb.exit._tag).toBe("Success")
      expect(b.log.map((e) => e.attempt)).toEqual([0, 1])
    })
  )

  it.effect("the primary's failure ends the call, as its retry policy words it", () =>
    Effect.gen(function* () {
      const hedge = yield* Hedge.make({
        policy: yield* Retry.make({ maxAttempts: 1 }),
        delay: 100,
        minSamples: 0
      })
      const { call } = scripted([{ millis: 500, fail: overloaded }, { millis: 1_000 }])
      const { exit, took } = yield* inVirtualTime(hedge.apply(call))
      expect(took).toBe(500)
      expect(exit._tag === "Failure" && String(exit.cause)).toMatch(/DontRetry/)
    })
  )

  it.effect(
    "around: a hedge passes the same gates; a refusal or a pause stops hedging; losers settle ignored",
    () =>
      Effect.gen(function* () {
        const settled: Array<[number, string]> = []
        let refuseHedges = false
        const gate: Admission.Gate<number, Errors.Throttled> = {
          tryEnter: (entry) => {
            const attempt = entry.getRef(Retry.currentAttempt)
            return refuseHedges && attempt > 0
              ? Admission.refuse(
                  new Errors.Throttled({ reason: "throttle", key: "k", probability: 1 } as any)
                )
              : attempt
          },
          enter: () => Effect.succeed(0),
          settle: (ticket, outcome) => void settled.push([ticket, outcome])
        }
        const hedge = yield* Hedge.make({
          policy: yield* Retry.make({ maxAttempts: 1 }),
          delay: 100,
          minSamples: 0,
          maxHedges: 2
        })
        let paused = false
        const guarded = hedge.around([gate], () => paused)
        const a = scripted([{ millis: 1_000 }, { millis: 10 }])
        expect((yield* inVirtualTime(guarded(a.call))).took).toBe(110)
        expect(settled).toEqual([
          [1, "success"],
          [0, "ignored"]
        ])
        refuseHedges = true
        const b = scripted([{ millis: 1_000 }, { millis: 10 }])
        expect((yield* inVirtualTime(guarded(b.call))).took).toBe(1_000)
        expect(b.log.length).toBe(1)
        refuseHedges = false
        paused = true
        const c = scripted([{ millis: 1_000 }, { millis: 10 }])
        expect((yield* inVirtualTime(guarded(c.call))).took).toBe(1_000)
        expect(c.log.length).toBe(1)
      })
  )

  it.effect(
    "a hedge never waits at a gate: one that would queue it refuses it, and the budget is refunded",
    () =>
      Effect.gen(function* () {
        const budgets = yield* RetryBudget.make({ ratio: 0, minRetriesPerSecond: 0.1, window: "10 seconds" })
        const budget = budgets.forKey("queued")
        const waited: Array<number> = []
        // The limiter is full: every try would wait for a permit, which comes after 300 ms.
        const full: Admission.Gate<number, never> = {
          tryEnter: () => Admission.Wait,
          enter: (entry) =>
            Effect.as(
              Effect.sync(() => waited.push(entry.getRef(Retry.currentAttempt))).pipe(
                Effect.andThen(Effect.sleep(300))
              ),
              0
            ),
          settle: () => {}
        }
        const hedge = yield* Hedge.make({
          policy: yield* Retry.make({ maxAttempts: 1, budget }),
          delay: 100,
          minSamples: 0,
          name: "queued"
        })
        const { call, log } = scripted([{ millis: 1_000 }, { millis: 10 }])
        const { exit, took } = yield* inVirtualTime(hedge.around([full])(call))
        // Only the primary waited and ran; the hedge was refused at the gate, not queued behind it.
        expect(exit._tag).toBe("Success")
        expect(took).toBe(1_300)
        expect(waited).toEqual([0])
        expect(log.map((e) => e.attempt)).toEqual([0])
        const count = (metric: typeof Hedge.metrics.sent, attributes: Record<string, string>) =>
          Effect.map(
            Metric.value(Metric.withAttributes(metric, { policy: "queued", ...attributes })),
            (s) => s.count
          )
        expect(yield* count(Hedge.metrics.refused, { reason: "gate" })).toBe(1)
        expect(yield* count(Hedge.metrics.sent, {})).toBe(0)
        // The withdrawal came back: the one retry the window allows is still there.
        expect((yield* budget.stats).retries).toBe(0)
      })
  )

  it.effect("a cold policy hedges nothing, even with a fixed delay: minSamples successful calls first", () =>
    Effect.gen(function* () {
      const hedge = yield* Hedge.make({
        policy: yield* Retry.make({ maxAttempts: 1 }),
        delay: 100,
        minSamples: 3,
        window: "10 seconds",
        name: "cold"
      })
      // Slow calls of a cold policy (1.1 s apart, inside the window): none is hedged, and a failed
      // one teaches nothing.
      for (let i = 0; i < 2; i++) {
        const slow = scripted([{ millis: 1_000 }, { millis: 10 }])
        expect((yield* inVirtualTime(hedge.apply(slow.call), 1_100)).took).toBe(1_000)
        expect(slow.log.length).toBe(1)
      }
      yield* inVirtualTime(hedge.apply(scripted([{ millis: 50, fail: overloaded }]).call), 1_100)
      const third = scripted([{ millis: 1_000 }, { millis: 10 }])
      expect((yield* inVirtualTime(hedge.apply(third.call), 1_100)).took).toBe(1_000)
      expect(third.log.length).toBe(1)
      // Three successes in the window: the next slow call is hedged after the fixed delay.
      const warm = scripted([{ millis: 1_000 }, { millis: 10 }])
      expect((yield* inVirtualTime(hedge.apply(warm.call), 1_100)).took).toBe(110)
      expect(warm.log.map((e) => e.attempt)).toEqual([0, 1])
      const sent = yield* Metric.value(Metric.withAttributes(Hedge.metrics.sent, { policy: "cold" }))
      expect(sent.count).toBe(1)
      // A window later with no call, the policy is cold again.
      yield* TestClock.adjust(20_000)
      const later = scripted([{ millis: 1_000 }, { millis: 10 }])
      expect((yield* inVirtualTime(hedge.apply(later.call))).took).toBe(1_000)
      expect(later.log.length).toBe(1)
    })
  )

  it.effect("learns its delay: no hedge before minSamples latencies, then the quantile of them", () =>
    Effect.gen(function* () {
      const hedge = yield* Hedge.make({
        policy: yield* Retry.make({ maxAttempts: 1 }),
        quantile: 0.9,
        minSamples: 10
      })
      const cold = scripted([{ millis: 1_000 }, { millis: 10 }])
      expect((yield* inVirtualTime(hedge.apply(cold.call))).took).toBe(1_000)
      for (let i = 0; i < 20; i++) yield* inVirtualTime(hedge.apply(scripted([{ millis: 40 }]).call), 100)
      const warm = scripted([{ millis: 1_000 }, { millis: 10 }])
      const { took } = yield* inVirtualTime(hedge.apply(warm.call))
      // p90 of twenty 40 ms calls and one of 1 s: about 40 ms (within the window's 1% accuracy).
      expect(took).toBeGreaterThanOrEqual(49)
      expect(took).toBeLessThanOrEqual(52)
      expect(warm.log.map((e) => e.attempt)).toEqual([0, 1])
    })
  )

  it.effect("bad options are an InvalidOptions naming the field", () =>
    Effect.gen(function* () {
      const policy = yield* Retry.make()
      const error = yield* Effect.flip(Hedge.make({ policy, maxHedges: 0 }))
      expect(error.message).toMatch(/maxHedges/)
      expect((yield* Effect.flip(Hedge.make({ policy, quantile: 1 }))).message).toMatch(/quantile/)
      expect(() => Hedge.makeUnsafe({ policy, delay: -1 })).toThrow(/delay/)
    })
  )
})

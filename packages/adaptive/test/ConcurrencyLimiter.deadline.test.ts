/**
 * A waiter whose deadline has passed or cannot be met is refused by the limiter's queue
 * (`Limiter.enterBy`), in virtual time: at arrival, while it waits, and when a permit frees up
 * for it. The expected service time is the smoothed round-trip time of admitted successes; a
 * cold limiter has none, so only a passed deadline refuses.
 */
import { ConcurrencyLimiter, LimitAlgorithm } from "@sluice/adaptive"
import { Admission, Errors } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { metricValue } from "./metricSnapshot.js"

/** Runs `work` through the limiter, waiting (when it must) by `deadline`. */
const runBy = <A, E>(limiter: ConcurrencyLimiter.Limiter, deadline: number, work: Effect.Effect<A, E>) =>
  work.pipe(
    Admission.guard([
      {
        tryEnter: limiter.gate.tryEnter,
        enter: (entry: Admission.Entry) => limiter.enterBy(entry, deadline),
        settle: limiter.gate.settle
      }
    ])
  )

const reasonOf = (exit: Exit.Exit<unknown, unknown>): string | undefined =>
  Exit.isFailure(exit) && exit.cause.reasons[0]?._tag === "Fail"
    ? (exit.cause.reasons[0].error as Errors.Overloaded).reason
    : undefined

/** A limiter of one permit whose service-time estimate is `serviceMs` (one success timed while another waited). */
const warm = (key: string, serviceMs: number, permits = 1) =>
  Effect.gen(function* () {
    const limiter = yield* ConcurrencyLimiter.make({
      key,
      algorithm: () => LimitAlgorithm.fixed(permits)
    })
    const runs = Array.from({ length: permits + 1 }, () =>
      Effect.forkChild(limiter.withLimiter(Effect.sleep(serviceMs)))
    )
    const fibers = yield* Effect.all(runs)
    yield* TestClock.adjust(serviceMs * 2)
    yield* Effect.forEach(fibers, Fiber.join, { discard: true })
    return limiter
  })

describe("ConcurrencyLimiter: a waiter whose deadline cannot be met", () => {
  it.effect("a cold limiter has no estimate: a waiter is refused only once its deadline has passed", () =>
    Effect.gen(function* () {
      const limiter = yield* ConcurrencyLimiter.make({
        key: "deadline-cold",
        algorithm: () => LimitAlgorithm.fixed(1)
      })
      expect(limiter.serviceTime).toBeUndefined()
      const holder = yield* Effect.forkChild(limiter.withLimiter(Effect.sleep(1_000)))
      yield* Effect.yieldNow
      const waiter = yield* Effect.forkChild(Effect.exit(runBy(limiter, 50, Effect.void)))
      yield* TestClock.adjust(49)
      expect(limiter.queued).toBe(1)
      yield* TestClock.adjust(1)
      const exit = yield* Fiber.join(waiter)
      expect(reasonOf(exit)).toBe("concurrency limit: deadline")
      expect(limiter.queued).toBe(0)
      expect(
        yield* metricValue("sluice_concurrency_limiter_rejected", {
          key: "deadline-cold",
          reason: "deadline"
        })
      ).toMatchObject({ count: 1 })
      yield* TestClock.adjust(1_000)
      yield* Fiber.join(holder)
    })
  )

  it.effect("the estimate is the smoothed time of admitted successes (gain 1/8)", () =>
    Effect.gen(function* () {
      const limiter = yield* warm("deadline-estimate", 100)
      expect(limiter.serviceTime).toBe(100)
      // One more success timed at 300 ms (it ran while another waited): 100 + (300 − 100) / 8.
      const slow = yield* Effect.forkChild(limiter.withLimiter(Effect.sleep(300)))
      yield* Effect.yieldNow
      const next = yield* Effect.forkChild(limiter.withLimiter(Effect.void))
      yield* TestClock.adjust(300)
      yield* Fiber.join(slow)
      yield* Fiber.join(next)
      expect(limiter.serviceTime).toBe(125)
      // A failure teaches the estimate nothing.
      const failing = yield* Effect.forkChild(
        Effect.exit(limiter.withLimiter(Effect.andThen(Effect.sleep(5_000), Effect.fail("boom"))))
      )
      yield* Effect.yieldNow
      const queued = yield* Effect.forkChild(limiter.withLimiter(Effect.void))
      yield* TestClock.adjust(5_000)
      yield* Fiber.join(failing)
      yield* Fiber.join(queued)
      expect(limiter.serviceTime).toBe(125)
    })
  )

  it.effect("at arrival: time left below the estimate is refused at once, without waiting", () =>
    Effect.gen(function* () {
      const limiter = yield* warm("deadline-arrival", 100)
      const start = 200
      const holder = yield* Effect.forkChild(limiter.withLimiter(Effect.sleep(1_000)))
      yield* Effect.yieldNow
      let ran = 0
      const exit = yield* Effect.exit(
        runBy(
          limiter,
          start + 80,
          Effect.sync(() => ran++)
        )
      )
      expect(reasonOf(exit)).toBe("concurrency limit: deadline-unmeetable")
      expect(ran).toBe(0)
      expect(limiter.queued).toBe(0)
      // Time left above the estimate: it waits (the holder's end, timed, makes the estimate 212.5).
      const meets = yield* Effect.forkChild(
        Effect.exit(
          runBy(
            limiter,
            start + 1_600,
            Effect.sync(() => ran++)
          )
        )
      )
      yield* Effect.yieldNow
      expect(limiter.queued).toBe(1)
      yield* TestClock.adjust(1_000)
      expect(Exit.isSuccess(yield* Fiber.join(meets))).toBe(true)
      expect(ran).toBe(1)
      yield* Fiber.join(holder)
      expect(
        yield* metricValue("sluice_concurrency_limiter_rejected", {
          key: "deadline-arrival",
          reason: "deadline-unmeetable"
        })
      ).toMatchObject({ count: 1 })
    })
  )

  it.effect("while waiting: a waiter leaves once its time left falls below the estimate", () =>
    Effect.gen(function* () {
      const limiter = yield* warm("deadline-waiting", 100)
      const holder = yield* Effect.forkChild(limiter.withLimiter(Effect.sleep(1_000)))
      yield* Effect.yieldNow
      const waiter = yield* Effect.forkChild(Effect.exit(runBy(limiter, 200 + 300, Effect.void)))
      yield* TestClock.adjust(199)
      expect(limiter.queued).toBe(1)
      yield* TestClock.adjust(1)
      // 100 ms left, the estimate 100: the latest start has come; gone before its deadline.
      expect(reasonOf(yield* Fiber.join(waiter))).toBe("concurrency limit: deadline-unmeetable")
      expect(limiter.queued).toBe(0)
      yield* TestClock.adjust(1_000)
      yield* Fiber.join(holder)
    })
  )

  it.effect("when a permit frees up: a waiter the new estimate says is too late gives it to the next", () =>
    Effect.gen(function* () {
      const limiter = yield* warm("deadline-drain", 100, 2)
      expect(limiter.serviceTime).toBe(100)
      const start = 200
      // Two permits: one slow holder (390 ms), one that keeps its permit.
      const slow = yield* Effect.forkChild(limiter.withLimiter(Effect.sleep(390)))
      const long = yield* Effect.forkChild(limiter.withLimiter(Effect.sleep(10_000)))
      yield* Effect.yieldNow
      // Time left 500 against an estimate of 100: it waits (its latest start at 400).
      const late = yield* Effect.forkChild(Effect.exit(runBy(limiter, start + 500, Effect.void)))
      let nextRan = false
      const next = yield* Effect.forkChild(
        Effect.exit(
          runBy(
            limiter,
            Infinity,
            Effect.sync(() => (nextRan = true))
          )
        )
      )
      yield* Effect.yieldNow
      expect(limiter.queued).toBe(2)
      // At 390 the slow one ends: the estimate becomes 100 + 290 / 8 = 136.25 > 110 left.
      yield* TestClock.adjust(390)
      expect(limiter.serviceTime).toBe(136.25)
      expect(reasonOf(yield* Fiber.join(late))).toBe("concurrency limit: deadline-unmeetable")
      expect(Exit.isSuccess(yield* Fiber.join(next))).toBe(true)
      expect(nextRan).toBe(true)
      yield* Fiber.join(slow)
      yield* TestClock.adjust(10_000)
      yield* Fiber.join(long)
      expect(limiter.inFlight).toBe(0)
      expect(limiter.queued).toBe(0)
    })
  )
})

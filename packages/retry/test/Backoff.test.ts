import { Errors, Options } from "@sluice/core"
import { Backoff, Retry } from "@sluice/retry"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Random, Ref, Schedule } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import { delaysOf } from "./helpers.js"

const inputs = (n: number): ReadonlyArray<unknown> => Array.from({ length: n }, () => undefined)

describe("Backoff.exponential", () => {
  it.effect("grows by the factor and stops growing at the cap", () =>
    Effect.gen(function* () {
      const schedule = Backoff.exponential({ base: "100 millis", factor: 2, max: "1 second" })
      expect(yield* delaysOf(schedule, inputs(7))).toEqual([100, 200, 400, 800, 1000, 1000, 1000])
      const tripled = Backoff.exponential({ base: 10, factor: 3 })
      expect(yield* delaysOf(tripled, inputs(4))).toEqual([10, 30, 90, 270])
    })
  )

  it.effect("stays finite after many recurrences", () =>
    Effect.gen(function* () {
      const delays = yield* delaysOf(Backoff.exponential({ base: 1, max: "5 seconds" }), inputs(2000))
      expect(delays.length).toBe(2000)
      expect(delays.at(-1)).toBe(5000)
    })
  )

  it.effect("never throws on bad options: validate, Retry.withRetry and Retry.make report them", () =>
    Effect.gen(function* () {
      const cases: Array<[Schedule.Schedule<unknown, any>, RegExp]> = [
        [Backoff.exponential({ base: -5 }), /base/],
        [Backoff.exponential({ base: 0 }), /base/],
        [Backoff.exponential({ base: "1 second", max: "100 millis" }), /max/],
        [Backoff.exponential({ base: 100, factor: 0.5 }), /factor/],
        [Backoff.exponential({ base: 100, factor: Number.NaN }).pipe(Backoff.jitter("full")), /factor/],
        [Backoff.exponential({ base: 100, max: -1 }), /max/],
        [Backoff.decorrelated({ base: 100, max: 50 }), /max/],
        [Backoff.honorRetryAfter(Schedule.spaced(10), { maxWait: Number.NaN }), /maxWait/],
        [Backoff.exponential({ base: 100, factor: 0 }).pipe(Backoff.honorRetryAfter()), /factor/]
      ]
      for (const [schedule, field] of cases) {
        const error = yield* Effect.flip(Backoff.validate(schedule))
        expect(error).toBeInstanceOf(Options.InvalidOptions)
        expect(error.message).toMatch(field)
        const viaRetry = yield* Effect.flip(Retry.withRetry(Effect.succeed(1), { schedule }))
        expect(viaRetry).toBeInstanceOf(Options.InvalidOptions)
        expect((viaRetry as Options.InvalidOptions).message).toMatch(/schedule/)
        const viaMake = yield* Effect.flip(Retry.make({ schedule }))
        expect(viaMake.message).toMatch(field)
      }
      const good = Backoff.exponential({ base: 100 })
      expect(yield* Backoff.validate(good)).toBe(good)
    })
  )

  it.effect("drives Effect.retry in virtual time", () =>
    Effect.gen(function* () {
      const calls = yield* Ref.make(0)
      const failing = Ref.updateAndGet(calls, (n) => n + 1).pipe(
        Effect.flatMap((n) => (n < 4 ? Effect.fail("boom") : Effect.succeed(n)))
      )
      const fiber = yield* Effect.forkChild(
        Effect.retry(failing, Backoff.exponential({ base: "1 second" }).pipe(Schedule.upTo({ times: 5 })))
      )
      yield* TestClock.adjust("2999 millis")
      expect(yield* Ref.get(calls)).toBe(2)
      yield* TestClock.adjust("4001 millis") // 1 s + 2 s + 4 s
      expect(yield* Fiber.join(fiber)).toBe(4)
    })
  )
})

describe("Backoff.jitter", () => {
  const base = Backoff.exponential({ base: 100, max: 10_000 })
  const expected = [100, 200, 400, 800, 1600, 3200, 6400, 10_000]

  it("full jitter stays in [0, d], equal jitter in [d/2, d], for any seed", () => {
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const run = (mode: Backoff.JitterMode) =>
          Effect.runSync(
            delaysOf(Backoff.jitter(base, mode), inputs(expected.length)).pipe(Random.withSeed(seed))
          )
        const full = run("full")
        const equal = run("equal")
        expected.forEach((d, i) => {
          expect(full[i]).toBeGreaterThanOrEqual(0)
          expect(full[i]).toBeLessThanOrEqual(d)
          expect(equal[i]).toBeGreaterThanOrEqual(d / 2)
          expect(equal[i]).toBeLessThanOrEqual(d)
        })
      }),
      { numRuns: 200 }
    )
  })

  it.effect("is reproducible with a seeded Random and varies across seeds", () =>
    Effect.gen(function* () {
      const schedule = base.pipe(Backoff.jitterFull)
      const a = yield* delaysOf(schedule, inputs(8)).pipe(Random.withSeed(42))
      const b = yield* delaysOf(schedule, inputs(8)).pipe(Random.withSeed(42))
      const c = yield* delaysOf(schedule, inputs(8)).pipe(Random.withSeed(43))
      expect(a).toEqual(b)
      expect(a).not.toEqual(c)
      expect(new Set(a).size).toBeGreaterThan(1)
      const equal = yield* delaysOf(base.pipe(Backoff.jitterEqual), inputs(8)).pipe(Random.withSeed(42))
      expect(equal).not.toEqual(expected)
    })
  )

  it("decorrelated delays stay in [base, min(max, 3 × previous)]", () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.integer({ min: 1, max: 500 }),
        fc.integer({ min: 0, max: 20_000 }),
        (seed, b, extra) => {
          const max = b + extra
          const delays = Effect.runSync(
            delaysOf(Backoff.decorrelated({ base: b, max }), inputs(30)).pipe(Random.withSeed(seed))
          )
          let previous = b
          for (const d of delays) {
            expect(d).toBeGreaterThanOrEqual(b)
            expect(d).toBeLessThanOrEqual(Math.min(max, 3 * previous) + 1e-9)
            previous = d
          }
        }
      ),
      { numRuns: 200 }
    )
  })
})

describe("Backoff.honorRetryAfter", () => {
  const schedule = Backoff.exponential({ base: 100, max: 10_000 }).pipe(
    Backoff.honorRetryAfter({ maxWait: "30 seconds" })
  )
  const overloaded = (retryAfter?: Duration.Duration) =>
    new Errors.Overloaded(retryAfter === undefined ? { reason: "busy" } : { reason: "busy", retryAfter })

  it.effect("takes the hint when it is longer than the computed delay", () =>
    Effect.gen(function* () {
      const delays = yield* delaysOf(schedule, [
        overloaded(Duration.seconds(2)), // hint 2000 > 100
        overloaded(), // no hint: 200
        overloaded(Duration.millis(50)), // hint 50 < 400
        new Errors.QuotaExceeded({ tier: "t", limit: 1, remaining: 0, retryAfter: Duration.seconds(5) }),
        { retryAfter: 2500 } // a plain millisecond number
      ])
      expect(delays).toEqual([2000, 200, 400, 5000, 2500])
    })
  )

  it.effect("clamps absurd and malformed hints to maxWait", () =>
    Effect.gen(function* () {
      const delays = yield* delaysOf(schedule, [
        overloaded(Duration.days(365 * 5)),
        overloaded(Duration.infinity),
        { retryAfter: -1000 },
        { retryAfter: Number.NaN },
        { retryAfter: "soon" } // not a hint at all: the computed delay
      ])
      expect(delays).toEqual([30_000, 30_000, 30_000, 30_000, 1600])
    })
  )

  it("clampRetryAfter", () => {
    expect(Duration.toMillis(Backoff.clampRetryAfter(Duration.days(365), "30 seconds"))).toBe(30_000)
    expect(Duration.toMillis(Backoff.clampRetryAfter(-5, "30 seconds"))).toBe(30_000)
    expect(Duration.toMillis(Backoff.clampRetryAfter(1500, "30 seconds"))).toBe(1500)
    expect(Duration.toMillis(Backoff.clampRetryAfter(Duration.zero, "30 seconds"))).toBe(0)
  })
})

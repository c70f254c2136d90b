import { describe, expect, it } from "@effect/vitest"
import { Errors, Options } from "@sluice/core"
import { Fallback } from "@sluice/retry"
import { Duration, Effect, Exit, Metric } from "effect"
import { TestClock } from "effect/testing"

const shed = new Errors.Overloaded({ reason: "shed" })
const gaveUp = new Errors.DontRetry({ reason: "attempts", cause: shed })

const served = (policy: string, signal: string, result: string) =>
  Effect.map(Metric.snapshot, (snapshots) => {
    let sum = 0
    for (const s of snapshots) {
      const a = s.attributes ?? {}
      if (s.id === "sluice_fallback" && a.policy === policy && a.signal === signal && a.result === result)
        sum += Number((s.state as { count: number }).count)
    }
    return sum
  })

describe("Fallback", () => {
  it.effect("withFallback answers an overload signal, and a DontRetry of one, from orElse", () =>
    Effect.gen(function* () {
      const signals: Array<string> = []
      const fallback = Fallback.withFallback({
        name: "wf",
        orElse: (_error: unknown, signal) => Effect.sync(() => (signals.push(signal), "cached"))
      })
      expect(yield* Effect.fail(shed).pipe(fallback)).toBe("cached")
      expect(yield* Effect.fail(gaveUp).pipe(fallback)).toBe("cached")
      expect(yield* Effect.fail(new Errors.Throttled({ key: "backend" })).pipe(fallback)).toBe("cached")
      expect(yield* Effect.succeed("fresh").pipe(fallback)).toBe("fresh")
      expect(signals).toEqual(["Overloaded", "Overloaded", "Throttled"])
      expect(yield* served("wf", "Overloaded", "served")).toBe(2)
    })
  )

  it.effect("withFallback never answers a programming error or a defect", () =>
    Effect.gen(function* () {
      const fallback = Fallback.withFallback({ orElse: () => Effect.succeed("cached") })
      const bug = new Error("bug")
      const failed = yield* Effect.exit(Effect.fail(bug).pipe(fallback))
      expect(failed).toEqual(Exit.fail(bug))
      const notRetryable = new Errors.DontRetry({ reason: "not-retryable", cause: bug })
      expect(yield* Effect.exit(Effect.fail(notRetryable).pipe(fallback))).toEqual(Exit.fail(notRetryable))
      const died = yield* Effect.exit(Effect.die(shed).pipe(fallback))
      expect(Exit.isFailure(died) && !Exit.hasFails(died)).toBe(true)
    })
  )

  it.effect("a cache remembers fresh answers and serves them, marked stale, until maxStale", () =>
    Effect.gen(function* () {
      const cache = yield* Fallback.makeCache<string, number>({ maxStale: "1 minute", name: "prices" })
      expect(yield* Effect.succeed(42).pipe(cache.withCache("sku"))).toEqual({ _tag: "Fresh", value: 42 })
      yield* TestClock.adjust("30 seconds")
      const stale = yield* Effect.fail(gaveUp).pipe(cache.withCache("sku"))
      expect(stale._tag).toBe("Stale")
      expect(stale.value).toBe(42)
      expect(stale._tag === "Stale" && stale.signal).toBe("Overloaded")
      expect(stale._tag === "Stale" ? Duration.toMillis(stale.age) : undefined).toBe(30_000)
      // another key has nothing to serve: the error passes on
      expect(yield* Effect.exit(Effect.fail(shed).pipe(cache.withCache("other")))).toEqual(Exit.fail(shed))
      // past maxStale the remembered answer is not served
      yield* TestClock.adjust("31 seconds")
      expect(yield* Effect.exit(Effect.fail(shed).pipe(cache.withCache("sku")))).toEqual(Exit.fail(shed))
      // a programming error is never answered from the cache
      yield* Effect.succeed(7).pipe(cache.withCache("sku"))
      const bug = new Error("bug")
      expect(yield* Effect.exit(Effect.fail(bug).pipe(cache.withCache("sku")))).toEqual(Exit.fail(bug))
      expect(yield* served("prices", "Overloaded", "served")).toBe(1)
      expect(yield* served("prices", "Overloaded", "missed")).toBe(2)
    })
  )

  it.effect("the age of a stale answer is the time since it was fresh", () =>
    Effect.gen(function* () {
      const cache = yield* Fallback.makeCache<string, string>({ maxStale: "10 seconds" })
      yield* Effect.succeed("v").pipe(cache.withCache("k"))
      yield* TestClock.adjust("4 seconds")
      const answer = yield* Effect.fail(
        new Errors.CircuitOpen({ name: "payments", halfOpenAt: 0, retryAfter: Duration.seconds(1) })
      ).pipe(cache.withCache("k"))
      expect(answer).toMatchObject({ _tag: "Stale", value: "v", signal: "CircuitOpen" })
      expect(answer._tag === "Stale" ? Duration.toMillis(answer.age) : undefined).toBe(4000)
    })
  )

  it.effect("bad options are InvalidOptions naming the field", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Fallback.makeCache({ maxStale: "1 minute", capacity: 0 }))
      expect(error).toBeInstanceOf(Options.InvalidOptions)
      expect(error.message).toMatch(/capacity/)
      const missing = yield* Effect.flip(Fallback.makeCache({} as Fallback.CacheOptions))
      expect(missing.message).toMatch(/maxStale/)
    })
  )
})

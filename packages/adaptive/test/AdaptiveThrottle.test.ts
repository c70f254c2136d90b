import { AdaptiveThrottle } from "@sluice/adaptive"
import { Criticality, Errors, Options } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Data, Duration, Effect, Exit, Fiber, Metric, Option, Random } from "effect"
import { TestClock } from "effect/testing"

class NotFound extends Data.TaggedError("NotFound")<{}> {}

/**
 * A backend that can accept `capacity` requests per second (the first ones in
 * each wall-clock second) and rejects the rest with `Overloaded`.
 */
const capacityBackend = (capacity: number) => {
  let second = -1
  let used = 0
  const stats = { arrived: 0, accepted: 0, rejected: 0 }
  const call = Effect.flatMap(Clock.currentTimeMillis, (now) => {
    stats.arrived++
    const s = Math.floor(now / 1000)
    if (s !== second) {
      second = s
      used = 0
    }
    if (used < capacity) {
      used++
      stats.accepted++
      return Effect.succeed("ok")
    }
    stats.rejected++
    return Effect.fail(new Errors.Overloaded({ reason: "capacity" }))
  })
  return { call, stats, reset: () => Object.assign(stats, { arrived: 0, accepted: 0, rejected: 0 }) }
}

interface Tally {
  requests: number
  throttled: number
  reachedAndRejected: number
  accepted: number
}

/**
 * Offers `rate` requests per second for `seconds`: every `tick` of virtual time
 * (TestClock), `rate × tick` requests arrive at once. Ticks keep the number of
 * TestClock adjustments (each a few real milliseconds) small; the throttle's
 * buckets (≥ 0.4 s) and the backend's one-second capacity are coarser than a tick.
 */
const drive = <E>(
  throttle: AdaptiveThrottle.Service,
  key: string,
  backend: Effect.Effect<string, E>,
  rate: number,
  seconds: number,
  tick: Duration.Input = "100 millis"
) =>
  Effect.gen(function* () {
    const tally: Tally = { requests: 0, throttled: 0, reachedAndRejected: 0, accepted: 0 }
    const tickMillis = Duration.toMillis(tick)
    const ticks = Math.round((seconds * 1000) / tickMillis)
    let owed = 0
    for (let i = 0; i < ticks; i++) {
      yield* TestClock.adjust(tickMillis)
      owed += (rate * tickMillis) / 1000
      for (; owed >= 1 - 1e-9; owed--) {
        const exit = yield* Effect.exit(throttle.withThrottle(backend, key))
        tally.requests++
        if (Exit.isSuccess(exit)) tally.accepted++
        else if (Option.getOrUndefined(Exit.findErrorOption(exit)) instanceof Errors.Throttled)
          tally.throttled++
        else tally.reachedAndRejected++
      }
    }
    return tally
  })

const seeded = (seed: number) => Random.withSeed(seed)

describe("AdaptiveThrottle", () => {
  it.effect("at steady state follows the formula: a backend accepting 30% sees K times what it accepts", () =>
    Effect.gen(function* () {
      // Offered N = 100/s, capacity C = 30/s, K = 2, window 2 minutes.
      // Steady state: R = N·W and A = C·W in the window, so
      //   p* = (R − K·A) / (R + 1) ≈ 1 − K·C/N = 0.4 (the +1 moves it by < 1e-4),
      // the share of requests that reach the backend and are rejected falls from
      // 1 − C/N = 0.7 to (1 − p*) − C/N = (K − 1)·C/N = 0.3.
      // Over 12 000 measured requests the Bernoulli draws give a standard deviation
      // of sqrt(0.4·0.6 / 12 000) ≈ 0.0045 on the shares; the tolerance 0.02 is > 4 sd
      // (and also covers the ±0.3% ripple of A/R within each second).
      const throttle = yield* AdaptiveThrottle.make()
      const backend = capacityBackend(30)
      yield* drive(throttle, "api", backend.call, 100, 240, "1 second")
      const tally = yield* drive(throttle, "api", backend.call, 100, 120, "1 second")
      const pStar = AdaptiveThrottle.steadyStateProbability(0.3, 2)
      expect(pStar).toBeCloseTo(0.4, 12)
      expect(tally.requests).toBe(12_000)
      expect(Math.abs(tally.throttled / tally.requests - pStar)).toBeLessThan(0.02)
      expect(Math.abs(tally.reachedAndRejected / tally.requests - (1 - pStar - 0.3))).toBeLessThan(0.02)
      expect(tally.accepted / tally.requests).toBeCloseTo(0.3, 3)
      // The peek agrees with the formula evaluated on the window's counts.
      const { accepts, requests } = throttle.statsUnsafe("api")
      const formula = Math.max(0, (requests - 2 * accepts) / (requests + 1))
      expect(throttle.probabilityUnsafe("api")).toBeCloseTo(formula, 12)
      expect(Math.abs(formula - pStar)).toBeLessThan(0.01)
      expect(yield* throttle.probability("api")).toBe(throttle.probabilityUnsafe("api"))
    }).pipe(seeded(42))
  )

  it.effect("without the throttle the same backend rejects 70% of requests (baseline)", () =>
    Effect.gen(function* () {
      const backend = capacityBackend(30)
      let rejected = 0
      for (let second = 0; second < 60; second++) {
        yield* TestClock.adjust(Duration.seconds(1))
        for (let i = 0; i < 100; i++) {
          const exit = yield* Effect.exit(backend.call)
          if (Exit.isFailure(exit)) rejected++
        }
      }
      expect(rejected / 6000).toBeCloseTo(0.7, 6)
    })
  )

  it.effect("less critical work is throttled first: K grows with criticality as documented", () =>
    Effect.gen(function* () {
      const throttle = yield* AdaptiveThrottle.make({ window: "10 seconds", buckets: 10 })
      expect(Criticality.levels.map((l) => throttle.k(l))).toEqual([3, 2, 1.75, 1.5])
      expect(AdaptiveThrottle.defaultKByCriticality(2)).toEqual({
        SHEDDABLE: 1.5,
        SHEDDABLE_PLUS: 1.75,
        CRITICAL: 2,
        CRITICAL_PLUS: 3
      })
      // Measured per level, each against its own throttle and backend (accepting 30%):
      // steady state p = 1 − K·0.3 → 0.55, 0.475, 0.4, 0.1. 4 000 measured requests per
      // level: sd ≤ sqrt(0.25 / 4000) ≈ 0.008, tolerance 0.035 (> 4 sd).
      const measured: Record<string, number> = {}
      for (const level of Criticality.levels) {
        const t = yield* AdaptiveThrottle.make({ window: "10 seconds", buckets: 10 })
        const backend = capacityBackend(30)
        yield* drive(t, level, backend.call, 100, 30, "1 second").pipe(Criticality.withCriticality(level))
        const tally = yield* drive(t, level, backend.call, 100, 40, "1 second").pipe(
          Criticality.withCriticality(level)
        )
        measured[level] = tally.throttled / tally.requests
        expect(
          Math.abs(measured[level]! - AdaptiveThrottle.steadyStateProbability(0.3, t.k(level)))
        ).toBeLessThan(0.035)
      }
      expect(measured.SHEDDABLE!).toBeGreaterThan(measured.SHEDDABLE_PLUS!)
      expect(measured.SHEDDABLE_PLUS!).toBeGreaterThan(measured.CRITICAL!)
      expect(measured.CRITICAL!).toBeGreaterThan(measured.CRITICAL_PLUS!)
      // On one shared state, the peek orders the levels the same way.
      const backend = capacityBackend(30)
      yield* drive(throttle, "shared", backend.call, 100, 20)
      const peeks = Criticality.levels.map((l) => throttle.probabilityUnsafe("shared", l))
      expect(peeks[0]!).toBeLessThan(peeks[1]!)
      expect(peeks[1]!).toBeLessThan(peeks[2]!)
      expect(peeks[2]!).toBeLessThan(peeks[3]!)
    }).pipe(seeded(10))
  )

  it.effect("caps the probability so the backend is always probed", () =>
    Effect.gen(function* () {
      const down = Effect.fail(new Errors.Overloaded({ reason: "down" }))
      const throttle = yield* AdaptiveThrottle.make({ window: "10 seconds", buckets: 10 })
      yield* drive(throttle, "down", down, 100, 20, "1 second")
      expect(throttle.probabilityUnsafe("down")).toBe(0.9)
      expect(throttle.probabilityUnsafe("down", "CRITICAL_PLUS")).toBe(0.9)
      // 6 000 requests at p = 0.9: sd ≈ 0.004, tolerance 0.015.
      const tally = yield* drive(throttle, "down", down, 100, 60, "1 second")
      expect(Math.abs(tally.throttled / tally.requests - 0.9)).toBeLessThan(0.015)
      expect(tally.reachedAndRejected).toBeGreaterThan(400)

      const lower = yield* AdaptiveThrottle.make({ window: "10 seconds", buckets: 10, maxProbability: 0.5 })
      yield* drive(lower, "down", down, 100, 20, "1 second")
      expect(lower.probabilityUnsafe("down", "SHEDDABLE")).toBe(0.5)
    }).pipe(seeded(3))
  )

  it.effect("a backend that recovers is noticed: probability returns to 0", () =>
    Effect.gen(function* () {
      let healthy = false
      const backend = Effect.suspend(() =>
        healthy ? Effect.succeed("ok") : Effect.fail(new Errors.Overloaded({ reason: "down" }))
      )
      const throttle = yield* AdaptiveThrottle.make({ window: "10 seconds", buckets: 10 })
      yield* drive(throttle, "b", backend, 100, 15, "500 millis")
      expect(throttle.probabilityUnsafe("b")).toBe(0.9)
      // Only admitted requests can be accepted, so p falls window by window
      // (p' ≈ 1 − K·(1 − p): 0.9 → 0.8 → 0.6 → 0.2 → 0), not at once.
      healthy = true
      yield* drive(throttle, "b", backend, 100, 10, "500 millis")
      const afterOneWindow = throttle.probabilityUnsafe("b")
      expect(afterOneWindow).toBeGreaterThan(0)
      expect(afterOneWindow).toBeLessThan(0.9)
      yield* drive(throttle, "b", backend, 100, 40, "500 millis")
      expect(throttle.probabilityUnsafe("b")).toBe(0)
    }).pipe(seeded(5))
  )

  it.effect("never throttles a client below the minimum request rate", () =>
    Effect.gen(function* () {
      const down = Effect.fail(new Errors.Overloaded({ reason: "down" }))
      // Default minRequestRate = 1/s over 2 minutes: fewer than 120 requests in the window.
      const throttle = yield* AdaptiveThrottle.make()
      const quiet = yield* drive(throttle, "quiet", down, 0.5, 600, "2 seconds")
      expect(quiet.requests).toBe(300)
      expect(quiet.throttled).toBe(0)
      expect(throttle.probabilityUnsafe("quiet")).toBe(0)
      // The same client at 2/s crosses the guard and is throttled.
      const busy = yield* drive(throttle, "quiet", down, 2, 300, "500 millis")
      expect(busy.throttled).toBeGreaterThan(0)
      expect(throttle.probabilityUnsafe("quiet")).toBe(0.9)
      // minRequestRate: 0 turns the guard off: the very second failed request can be throttled.
      const eager = yield* AdaptiveThrottle.make({ minRequestRate: 0 })
      yield* Effect.exit(eager.withThrottle(down, "x"))
      expect(eager.probabilityUnsafe("x")).toBeCloseTo(1 / 2, 12)
    }).pipe(seeded(11))
  )

  it.effect("what counts as a rejection is a predicate; other errors are accepts", () =>
    Effect.gen(function* () {
      const notFound = Effect.fail(new NotFound())
      const byDefault = yield* AdaptiveThrottle.make({ window: "10 seconds", buckets: 10, minRequestRate: 0 })
      const d = yield* drive(byDefault, "k", notFound, 100, 5)
      expect(d.throttled).toBe(0)
      expect(byDefault.statsUnsafe("k")).toEqual({ requests: 500, accepts: 500, inFlight: 0 })

      const custom = yield* AdaptiveThrottle.make({
        window: "10 seconds",
        minRequestRate: 0,
        isRejection: (e) => e instanceof NotFound
      })
      const c = yield* drive(custom, "k", notFound, 100, 10)
      expect(c.throttled).toBeGreaterThan(700)
      expect(custom.statsUnsafe("k").accepts).toBe(0)

      for (const error of [
        new Errors.Overloaded({ reason: "x" }),
        new Errors.QuotaExceeded({ tier: "t", limit: 1, remaining: 0, retryAfter: Duration.seconds(1) }),
        new Errors.DontRetry({ reason: "attempts", cause: new Errors.Overloaded({ reason: "x" }) })
      ]) {
        expect(AdaptiveThrottle.defaultIsRejection(error)).toBe(true)
      }
      for (const error of [
        new Errors.Throttled({ key: "a" }),
        new Errors.DontRetry({ reason: "not-retryable" }),
        new Error("boom"),
        "string",
        null
      ]) {
        expect(AdaptiveThrottle.defaultIsRejection(error)).toBe(false)
      }
      // Defects go through the same predicate: a generic defect is an answer.
      const dying = yield* AdaptiveThrottle.make({ window: "10 seconds", minRequestRate: 0 })
      yield* Effect.exit(dying.withThrottle(Effect.die(new Error("bug")), "k"))
      expect(dying.statsUnsafe("k")).toEqual({ requests: 1, accepts: 1, inFlight: 0 })
    }).pipe(seeded(13))
  )

  it.effect(
    "requests it fails locally still count as requests; calls their callers interrupt count for nothing",
    () =>
      Effect.gen(function* () {
        let reached = 0
        const down = Effect.suspend(() => {
          reached++
          return Effect.fail(new Errors.Overloaded({ reason: "down" }))
        })
        const throttle = yield* AdaptiveThrottle.make({
          window: "10 seconds",
          buckets: 10,
          minRequestRate: 0
        })
        const tally = yield* drive(throttle, "k", down, 100, 5)
        expect(tally.throttled).toBeGreaterThan(300)
        expect(reached).toBe(500 - tally.throttled)
        expect(throttle.statsUnsafe("k")).toEqual({ requests: 500, accepts: 0, inFlight: 0 })

        const other = yield* AdaptiveThrottle.make({ window: "10 seconds" })
        const fiber = yield* Effect.forkChild(other.withThrottle(Effect.never, "slow"))
        yield* TestClock.adjust(Duration.seconds(1))
        yield* Fiber.interrupt(fiber)
        // Cancelled by its caller: no evidence about the backend either way.
        expect(other.statsUnsafe("slow")).toEqual({ requests: 0, accepts: 0, inFlight: 0 })

        // Refused on this side (a local limiter's queue, an open breaker) is not a rejection.
        const local = yield* AdaptiveThrottle.make({ window: "10 seconds", minRequestRate: 0 })
        for (let i = 0; i < 200; i++) {
          yield* Effect.exit(
            local.withThrottle(
              Effect.fail(new Errors.Overloaded({ reason: "queue full", origin: "local" })),
              "q"
            )
          )
          yield* Effect.exit(
            local.withThrottle(
              Effect.fail(
                new Errors.CircuitOpen({ name: "b", halfOpenAt: 0, retryAfter: Duration.seconds(1) })
              ),
              "q"
            )
          )
        }
        expect(local.statsUnsafe("q")).toEqual({ requests: 0, accepts: 0, inFlight: 0 })
        expect(local.probabilityUnsafe("q")).toBe(0)
      }).pipe(seeded(17))
  )

  it.effect("is reproducible with a seed", () =>
    Effect.gen(function* () {
      const down = Effect.fail(new Errors.Overloaded({ reason: "down" }))
      const once = (seed: number) =>
        Effect.gen(function* () {
          const throttle = yield* AdaptiveThrottle.make({ window: "10 seconds", minRequestRate: 0 })
          const decisions: Array<boolean> = []
          for (let i = 0; i < 300; i++) {
            if (i % 10 === 0) yield* TestClock.adjust(Duration.millis(100))
            const exit = yield* Effect.exit(throttle.withThrottle(down, "k"))
            decisions.push(Option.getOrUndefined(Exit.findErrorOption(exit))?._tag === "Throttled")
          }
          return decisions
        }).pipe(seeded(seed))
      const a = yield* once(99)
      const b = yield* once(99)
      const c = yield* once(100)
      expect(a).toEqual(b)
      expect(a).not.toEqual(c)
    })
  )

  it.effect("the Throttled error carries the key and probability; the dual combinator uses the layer", () =>
    Effect.gen(function* () {
      const down = Effect.fail(new Errors.Overloaded({ reason: "down" }))
      const program = Effect.gen(function* () {
        const throttle = yield* AdaptiveThrottle.AdaptiveThrottle
        let error: Errors.Throttled | undefined
        for (let i = 0; i < 200 && error === undefined; i++) {
          const exit = yield* Effect.exit(AdaptiveThrottle.withThrottle(down, "svc"))
          const failure = Option.getOrUndefined(Exit.findErrorOption(exit))
          if (failure?._tag === "Throttled") error = failure
        }
        expect(error).toBeInstanceOf(Errors.Throttled)
        expect(error!.key).toBe("svc")
        expect(error!.probability).toBeGreaterThan(0)
        expect(error!.probability).toBeLessThanOrEqual(0.9)
        const ok = yield* Effect.succeed(1).pipe(AdaptiveThrottle.withThrottle("healthy"))
        expect(ok).toBe(1)
        expect(throttle.statsUnsafe("healthy")).toEqual({ requests: 1, accepts: 1, inFlight: 0 })
      })
      yield* program.pipe(Effect.provide(AdaptiveThrottle.layer({ minRequestRate: 0 })))
    }).pipe(seeded(19))
  )

  it.effect("bounds the number of keys (least recently used evicted)", () =>
    Effect.gen(function* () {
      const throttle = yield* AdaptiveThrottle.make({ maxKeys: 2 })
      yield* throttle.withThrottle(Effect.void, "a")
      yield* TestClock.adjust(Duration.millis(1))
      yield* throttle.withThrottle(Effect.void, "b")
      yield* TestClock.adjust(Duration.millis(1))
      yield* throttle.withThrottle(Effect.void, "a")
      yield* TestClock.adjust(Duration.millis(1))
      yield* throttle.withThrottle(Effect.void, "c")
      expect([...throttle.keysUnsafe()].sort()).toEqual(["a", "c"])
      expect(throttle.statsUnsafe("b")).toEqual({ requests: 0, accepts: 0, inFlight: 0 })
      expect(throttle.statsUnsafe("a")).toEqual({ requests: 2, accepts: 2, inFlight: 0 })
    })
  )

  it.effect("reports metrics tagged by key and criticality", () =>
    Effect.gen(function* () {
      const down = Effect.fail(new Errors.Overloaded({ reason: "down" }))
      const throttle = yield* AdaptiveThrottle.make({ window: "10 seconds", buckets: 10, minRequestRate: 0 })
      const tally = yield* drive(throttle, "metrics-key", down, 100, 5).pipe(
        Criticality.withCriticality("SHEDDABLE")
      )
      yield* throttle
        .withThrottle(Effect.void, "metrics-key")
        .pipe(Criticality.withCriticality("CRITICAL"), Effect.exit)
      const byKey = <I, S>(m: Metric.Metric<I, S>) => Metric.withAttributes(m, { key: "metrics-key" })
      const byLevel = <I, S>(m: Metric.Metric<I, S>) =>
        Metric.withAttributes(byKey(m), { criticality: "SHEDDABLE" })
      expect((yield* Metric.value(byKey(AdaptiveThrottle.metrics.requests))).count).toBe(501)
      expect((yield* Metric.value(byKey(AdaptiveThrottle.metrics.accepts))).count).toBeLessThanOrEqual(1)
      expect((yield* Metric.value(byLevel(AdaptiveThrottle.metrics.throttled))).count).toBe(tally.throttled)
      expect((yield* Metric.value(byLevel(AdaptiveThrottle.metrics.probability))).value).toBe(0.9)
    }).pipe(seeded(23))
  )

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<[AdaptiveThrottle.AdaptiveThrottleOptions, RegExp]> = [
        [{ k: 0.5 }, /k/],
        [{ k: Number.NaN }, /k/],
        [{ maxProbability: 1 }, /maxProbability/],
        [{ maxProbability: -0.1 }, /maxProbability/],
        [{ window: 0 }, /window/],
        [{ buckets: 0 }, /buckets/],
        [{ minRequestRate: -1 }, /minRequestRate/],
        [{ maxKeys: 1.5 }, /maxKeys/],
        [
          { kByCriticality: { SHEDDABLE: 2, SHEDDABLE_PLUS: 1.5, CRITICAL: 2, CRITICAL_PLUS: 3 } },
          /kByCriticality\.SHEDDABLE_PLUS/
        ],
        [
          { kByCriticality: { SHEDDABLE: 0.5, SHEDDABLE_PLUS: 1.5, CRITICAL: 2, CRITICAL_PLUS: 3 } },
          /SHEDDABLE/
        ],
        [{ isRejection: 3 as any }, /isRejection/]
      ]
      for (const [options, field] of cases) {
        const exit = yield* Effect.exit(AdaptiveThrottle.make(options))
        expect(Exit.isFailure(exit)).toBe(true)
        const error = Option.getOrUndefined(Exit.findErrorOption(exit))
        expect(error).toBeInstanceOf(Options.InvalidOptions)
        expect(error?.message).toMatch(field)
        expect(error?.message).toMatch(/AdaptiveThrottle/)
      }
      const custom = yield* AdaptiveThrottle.make({
        kByCriticality: { SHEDDABLE: 1, SHEDDABLE_PLUS: 1, CRITICAL: 4, CRITICAL_PLUS: 8 }
      })
      expect(custom.k("CRITICAL")).toBe(4)
    })
  )
})

import { Breaker, type BreakerOptions, type State } from "@sluice/kernel/breaker/CircuitBreaker"
import * as BreakerModule from "@sluice/kernel/breaker/CircuitBreaker"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const at = (t: number) => () => t

// A call that starts and ends at `t`: refused (false), or settled as a success or a failure.
const succeed = (breaker: Breaker, t: number): boolean => {
  const permit = breaker.tryAcquire(t)
  if (permit === undefined) return false
  breaker.onSuccess(permit, at(t))
  return true
}
const fail = (breaker: Breaker, t: number): boolean => {
  const permit = breaker.tryAcquire(t)
  if (permit === undefined) return false
  breaker.onFailure(permit, at(t))
  return true
}

describe("Breaker", () => {
  it("trips on N consecutive failures; a success resets the count", () => {
    const breaker = new Breaker({ consecutiveFailures: 3, openFor: 10_000 })
    fail(breaker, 0)
    fail(breaker, 0)
    succeed(breaker, 0)
    fail(breaker, 0)
    fail(breaker, 0)
    expect(breaker.state(0)).toBe("closed")
    expect(fail(breaker, 1_000)).toBe(true)
    expect(breaker.state(1_000)).toBe("open")
    expect(breaker.tryAcquire(5_000)).toBeUndefined()
    expect(breaker.halfOpenAt).toBe(11_000)
    expect(breaker.retryAfterMillis(5_000)).toBe(6_000)
    expect(breaker.state(11_000)).toBe("half-open")
  })

  it("defaults: 5 consecutive failures, open for 5 seconds, one probe", () => {
    const breaker = new Breaker()
    for (let i = 0; i < 4; i++) fail(breaker, 0)
    expect(breaker.state(0)).toBe("closed")
    fail(breaker, 0)
    expect(breaker.state(0)).toBe("open")
    expect(breaker.state(4_999)).toBe("open")
    expect(breaker.state(5_000)).toBe("half-open")
    succeed(breaker, 5_000)
    expect(breaker.state(5_000)).toBe("closed")
  })

  it("trips on a failure ratio over the window once the minimum volume is reached", () => {
    const breaker = new Breaker({ failureRatio: { ratio: 0.5, windowMillis: 10_000, minimumCalls: 10 } })
    // Only the ratio trips: 6 failures in a row below the minimum volume do not.
    for (let i = 0; i < 6; i++) fail(breaker, 0)
    expect(breaker.state(0)).toBe("closed")
    for (let i = 0; i < 3; i++) succeed(breaker, 0)
    expect(breaker.state(0)).toBe("closed") // 6/9: below minimum volume
    succeed(breaker, 0) // 6/10 >= 0.5
    expect(breaker.state(0)).toBe("closed") // a success never trips
    fail(breaker, 0) // 7/11
    expect(breaker.state(0)).toBe("open")
  })

  it("trips at exactly the configured share (55 of 100 at 0.55, 7/100, 7/50, 7/25), not one failure before", () => {
    for (const [failures, calls, ratio] of [
      [55, 100, 0.55],
      [7, 100, 0.07],
      [7, 50, 0.14],
      [7, 25, 0.28],
      [1, 3, 1 / 3],
      [29, 100, 0.29]
    ] as const) {
      const breaker = new Breaker({ failureRatio: { ratio, windowMillis: 60_000, minimumCalls: calls } })
      // successes first, then failures: the last failure completes the share
      for (let i = 0; i < calls - failures; i++) succeed(breaker, 0)
      for (let i = 0; i < failures - 1; i++) fail(breaker, 0)
      expect(breaker.state(0)).toBe("closed")
      fail(breaker, 0)
      expect([failures, calls, ratio, breaker.state(0)]).toEqual([failures, calls, ratio, "open"])
    }
  })

  it("the failure-ratio window forgets old outcomes", () => {
    const breaker = new Breaker({ failureRatio: { ratio: 0.5, windowMillis: 10_000, minimumCalls: 4 } })
    for (let i = 0; i < 3; i++) fail(breaker, 0)
    succeed(breaker, 20_000)
    succeed(breaker, 20_000)
    succeed(breaker, 20_000)
    fail(breaker, 20_000) // 1/4 in the window
    expect(breaker.state(20_000)).toBe("closed")
    fail(breaker, 20_000) // 2/5
    expect(breaker.state(20_000)).toBe("closed")
    fail(breaker, 20_000) // 3/6
    expect(breaker.state(20_000)).toBe("open")
  })

  it("half-open closes only after K probes succeed and refuses extra calls", () => {
    const breaker = new Breaker({ consecutiveFailures: 1, openFor: 1_000, halfOpenProbes: 2 })
    fail(breaker, 0)
    const p1 = breaker.tryAcquire(1_000)!
    const p2 = breaker.tryAcquire(1_000)!
    expect(breaker.isProbe(p1)).toBe(true)
    expect(breaker.tryAcquire(1_000)).toBeUndefined()
    expect(breaker.retryAfterMillis(1_000)).toBe(0)
    expect(breaker.state(1_000)).toBe("half-open")
    breaker.onSuccess(p1, at(1_100))
    expect(breaker.state(1_100)).toBe("half-open")
    breaker.onSuccess(p2, at(1_100))
    expect(breaker.state(1_100)).toBe("closed")
    expect(breaker.isProbe(p2)).toBe(false)
  })

  it("one successful probe is not enough when K = 2; a probe failure re-opens", () => {
    const breaker = new Breaker({ consecutiveFailures: 1, openFor: 1_000, halfOpenProbes: 2 })
    fail(breaker, 0)
    succeed(breaker, 1_000)
    expect(breaker.state(1_000)).toBe("half-open")
    fail(breaker, 1_000)
    expect(breaker.state(1_000)).toBe("open")
    succeed(breaker, 2_000)
    succeed(breaker, 2_000)
    expect(breaker.state(2_000)).toBe("closed")
  })

  it("openFor as a function of the trips since the breaker last closed: a backoff, restarted once closed", () => {
    const seen: Array<number> = []
    const breaker = new Breaker({
      consecutiveFailures: 1,
      openFor: (_now, trips) => {
        seen.push(trips)
        return 1_000 * 2 ** trips
      }
    })
    let t = 0
    fail(breaker, t)
    expect(breaker.retryAfterMillis(t)).toBe(1_000)
    t += 1_000
    fail(breaker, t) // failed probe
    expect(breaker.retryAfterMillis(t)).toBe(2_000)
    t += 2_000
    fail(breaker, t)
    expect(breaker.retryAfterMillis(t)).toBe(4_000)
    t += 4_000
    succeed(breaker, t) // probe succeeds: closed, trips restart
    expect(breaker.state(t)).toBe("closed")
    fail(breaker, t)
    expect(breaker.retryAfterMillis(t)).toBe(1_000)
    expect(seen).toEqual([0, 1, 2, 0])
  })

  it("isolate forces it open until reset", () => {
    const breaker = new Breaker()
    breaker.isolate(0)
    expect(breaker.state(0)).toBe("isolated")
    expect(breaker.state(3_600_000)).toBe("isolated")
    expect(breaker.tryAcquire(3_600_000)).toBeUndefined()
    expect(breaker.halfOpenAt).toBe(Infinity)
    expect(breaker.retryAfterMillis(3_600_000)).toBe(Infinity)
    breaker.reset(3_600_000)
    expect(breaker.state(3_600_000)).toBe("closed")
    expect(succeed(breaker, 3_600_000)).toBe(true)
  })

  it("reset forgets consecutive failures", () => {
    const breaker = new Breaker({ consecutiveFailures: 2 })
    fail(breaker, 0)
    breaker.reset(0)
    fail(breaker, 0)
    expect(breaker.state(0)).toBe("closed")
    fail(breaker, 0)
    expect(breaker.state(0)).toBe("open")
    breaker.reset(0)
    expect(breaker.state(0)).toBe("closed")
  })

  it("an ignored outcome counts nothing; an ignored probe frees its slot", () => {
    const breaker = new Breaker({ consecutiveFailures: 1, openFor: 1_000 })
    for (let i = 0; i < 3; i++) breaker.onIgnored(breaker.tryAcquire(0)!)
    expect(breaker.state(0)).toBe("closed")
    fail(breaker, 0)
    const probe = breaker.tryAcquire(1_000)!
    expect(breaker.tryAcquire(1_000)).toBeUndefined()
    breaker.onIgnored(probe)
    expect(breaker.state(1_000)).toBe("half-open")
    expect(succeed(breaker, 1_000)).toBe(true)
    expect(breaker.state(1_000)).toBe("closed")
  })

  it("outcomes of calls admitted before a state change are ignored", () => {
    const breaker = new Breaker({ consecutiveFailures: 1, openFor: 1_000 })
    const slow = breaker.tryAcquire(0)!
    fail(breaker, 0)
    expect(breaker.state(0)).toBe("open")
    expect(breaker.state(1_000)).toBe("half-open")
    // The late success belonged to the closed state: it does not close the breaker.
    breaker.onSuccess(slow, at(5_000))
    expect(breaker.state(5_000)).toBe("half-open")
    breaker.onFailure(slow, at(5_000))
    expect(breaker.state(5_000)).toBe("half-open")
  })

  it("reports every transition, with the time, in order", () => {
    const seen: Array<string> = []
    const breaker = new Breaker({
      consecutiveFailures: 1,
      openFor: 1_000,
      onTransition: (from, to, now) => seen.push(`${from}->${to}@${now}`)
    })
    fail(breaker, 0)
    expect(breaker.tryAcquire(500)).toBeUndefined()
    succeed(breaker, 1_000) // the probe
    breaker.isolate(2_000)
    breaker.reset(3_000)
    breaker.reset(4_000)
    expect(seen).toEqual([
      "closed->open@0",
      "open->half-open@1000",
      "half-open->closed@1000",
      "closed->isolated@2000",
      "isolated->closed@3000",
      "closed->closed@4000"
    ])
  })

  it("a success in the closed state reads the time only when a failure ratio is configured", () => {
    let reads = 0
    const counted = () => {
      reads++
      return 0
    }
    const consecutive = new Breaker({ consecutiveFailures: 2 })
    consecutive.onSuccess(consecutive.tryAcquire(0)!, counted)
    expect(reads).toBe(0)
    const ratio = new Breaker({ failureRatio: { ratio: 0.5, windowMillis: 1_000, minimumCalls: 2 } })
    ratio.onSuccess(ratio.tryAcquire(0)!, counted)
    expect(reads).toBe(1)
  })

  it("rejects bad options with a RangeError naming the field", () => {
    const cases: Array<[BreakerOptions, RegExp]> = [
      [{ consecutiveFailures: 0 }, /consecutiveFailures/],
      [{ consecutiveFailures: 1.5 }, /consecutiveFailures/],
      [{ consecutiveFailures: Number.NaN }, /consecutiveFailures/],
      [{ halfOpenProbes: 0 }, /halfOpenProbes/],
      [{ openFor: -1 }, /openFor/],
      [{ openFor: 0 }, /openFor/],
      [{ openFor: Number.NaN }, /openFor/],
      [{ failureRatio: { ratio: 0, windowMillis: 1_000, minimumCalls: 1 } }, /ratio/],
      [{ failureRatio: { ratio: 1.5, windowMillis: 1_000, minimumCalls: 1 } }, /ratio/],
      [{ failureRatio: { ratio: 0.5, windowMillis: 0, minimumCalls: 1 } }, /windowMillis/],
      [{ failureRatio: { ratio: 0.5, windowMillis: 1_000, minimumCalls: 0 } }, /minimumCalls/]
    ]
    for (const [options, field] of cases) {
      expect(() => new Breaker(options)).toThrow(RangeError)
      expect(() => new Breaker(options)).toThrow(field)
    }
  })

  // A model of the rule, written from the description: K probes per half-open period at most,
  // and no slot leaked by probes whose outcome counted nothing.
  it("never lets more than K probes through per half-open period, under random interleavings", () => {
    type Op =
      | { readonly kind: "start"; readonly dt: number }
      | { readonly kind: "end"; readonly pick: number; readonly as: "success" | "failure" | "ignored" }
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant("start" as const), dt: fc.integer({ min: 0, max: 400 }) }),
      fc.record({
        kind: fc.constant("end" as const),
        pick: fc.nat(),
        as: fc.constantFrom("success" as const, "success" as const, "failure" as const, "ignored" as const)
      })
    )
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 5 }).map((n) => n * 100),
        fc.array(opArb, { minLength: 1, maxLength: 80 }),
        (probes, failures, openMillis, ops) => {
          let state = "closed" as State
          let episode = 0
          const breaker = new Breaker({
            consecutiveFailures: failures,
            openFor: openMillis,
            halfOpenProbes: probes,
            onTransition: (_from, to) => {
              state = to
              if (to === "half-open") episode++
            }
          })
          const inFlight: Array<{ readonly permit: number; readonly episode: number | undefined }> = []
          const admitted = new Map<number, number>()
          const freed = new Map<number, number>()
          let now = 0
          for (const op of ops) {
            if (op.kind === "start") {
              now += op.dt
              const permit = breaker.tryAcquire(now)
              if (permit === undefined) continue
              const mine = state === "half-open" ? episode : undefined
              expect(breaker.isProbe(permit)).toBe(mine !== undefined)
              if (mine !== undefined) {
                admitted.set(mine, (admitted.get(mine) ?? 0) + 1)
                expect(admitted.get(mine)! - (freed.get(mine) ?? 0)).toBeLessThanOrEqual(probes)
              }
              inFlight.push({ permit, episode: mine })
            } else if (inFlight.length > 0) {
              const [call] = inFlight.splice(op.pick % inFlight.length, 1)
              if (op.as === "ignored") {
                if (call!.episode !== undefined && call!.episode === episode && breaker.isProbe(call!.permit))
                  freed.set(call!.episode, (freed.get(call!.episode) ?? 0) + 1)
                breaker.onIgnored(call!.permit)
              } else if (op.as === "success") breaker.onSuccess(call!.permit, at(now))
              else breaker.onFailure(call!.permit, at(now))
            }
          }
          // No slot may be leaked: once every call settled and the open period is over, a call goes through.
          for (const call of inFlight) breaker.onIgnored(call.permit)
          return breaker.tryAcquire(now + openMillis * 2) !== undefined
        }
      ),
      { numRuns: 300 }
    )
  })
})

describe("Breaker: open durations a backoff gives up on, settling by outcome, what callers see", () => {
  it("an openFor answer of undefined or a non-finite one keeps the previous duration; a negative one is 0", () => {
    const answers: Array<number | undefined> = [undefined, 2_000, Infinity, undefined, -50]
    const breaker = new Breaker({ consecutiveFailures: 1, openFor: () => answers.shift() })
    const tripAt = (t: number) => {
      expect(breaker.state(t)).not.toBe("open")
      fail(breaker, t)
      return breaker.halfOpenAt - t
    }
    // 5 seconds before the first answer; then the last usable one stays
    expect([tripAt(0), tripAt(10_000), tripAt(20_000), tripAt(30_000), tripAt(40_000)]).toEqual([
      5_000, 2_000, 2_000, 2_000, 0
    ])
  })

  it("settle: success a success, dropped and failed a failure when they count, refused and ignored nothing", () => {
    const asked: Array<unknown> = []
    const isFailure = (error: unknown) => {
      asked.push(error)
      if (error === "throws") throw new Error("a broken predicate")
      return error !== "not counted"
    }
    const breaker = new Breaker({ consecutiveFailures: 2, openFor: 1_000, isFailure })
    const errorOf = (error: unknown) => (error === "defect" ? undefined : { error })
    const settle = (outcome: Parameters<Breaker["settle"]>[1], error: unknown = "counted") =>
      breaker.settle(breaker.tryAcquire(0)!, outcome, at(0), errorOf, error)
    settle("dropped")
    settle("success")
    settle("failed")
    settle("failed", "not counted")
    settle("refused")
    settle("ignored")
    expect(breaker.state(0)).toBe("closed")
    expect(asked).toEqual(["counted", "counted", "not counted"])
    // a failure that does not count is a success; a defect always counts, and so does an error
    // the predicate throws on
    settle("failed", "defect")
    expect(breaker.state(0)).toBe("closed")
    settle("dropped", "throws")
    expect(breaker.state(0)).toBe("open")
    // a permit of a generation that is gone: ignored, and nothing is asked
    asked.length = 0
    breaker.settle(0, "failed", at(0), errorOf, "stale")
    expect(asked).toEqual([])
  })

  it("settle: without isFailure every failure counts, and its error is not even looked up", () => {
    const breaker = new Breaker({ consecutiveFailures: 1, openFor: 1_000 })
    const looked: Array<unknown> = []
    breaker.settle(breaker.tryAcquire(0)!, "failed", at(0), (e) => (looked.push(e), { error: e }), "x")
    expect(breaker.state(0)).toBe("open")
    expect(looked).toEqual([])
  })

  it("settle: a refused or ignored probe gives its slot back", () => {
    const breaker = new Breaker({ consecutiveFailures: 1, openFor: 1_000, halfOpenProbes: 1 })
    fail(breaker, 0)
    const probe = breaker.tryAcquire(1_000)!
    expect(breaker.tryAcquire(1_000)).toBeUndefined()
    breaker.settle(probe, "ignored", at(1_000), () => undefined, undefined)
    expect(breaker.tryAcquire(1_000)).toBeDefined()
  })

  it("reports an isolated breaker as open", () => {
    const states: Array<State> = ["closed", "half-open", "open", "isolated"]
    expect(states.map(BreakerModule.reported)).toEqual(["closed", "half-open", "open", "open"])
  })

  it("options: openFor 5 s and one probe by default; a failure ratio in (0, 1] over a positive window", () => {
    const { consecutiveFailures, halfOpenProbes, openFor } = BreakerModule.options
    expect(consecutiveFailures.fallback).toEqual({ value: undefined })
    expect(consecutiveFailures.check(1.5)).toBe("expected a positive integer, got 1.5")
    expect([openFor.fallback.value, halfOpenProbes.fallback.value]).toEqual([5_000, 1])
    expect(openFor.check(0)).toBe("expected a positive, finite duration, got 0")
    const { buckets, minimumCalls, ratio, window } = BreakerModule.failureRatioOptions
    expect(ratio.check(0)).toBe("expected a ratio in (0, 1], got 0")
    expect(ratio.check(1.5)).toBe("expected a ratio in (0, 1], got 1.5")
    expect(ratio.check(1)).toBeUndefined()
    expect(window.check(0)).toBe("expected a positive, finite duration, got 0")
    expect(minimumCalls.check(0)).toBe("expected a positive integer, got 0")
    expect(buckets.fallback.value).toBe(10)
  })
})

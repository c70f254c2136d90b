import { AimdLimit, ConcurrencyLimiter, CongestionWindow, LimitAlgorithm, VegasLimit } from "@sluice/adaptive"
import { Errors } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"

/**
 * A backend with `slots` parallel slots: an accepted request holds a slot for
 * `serviceMs` and succeeds; one that finds every slot busy fails with
 * `Overloaded` after `rejectMs`. Requests arrive at 1 per millisecond.
 */
const overload = (algorithm: LimitAlgorithm.Factory, requests: number) =>
  Effect.gen(function* () {
    const slots = 10
    const serviceMs = 100
    const rejectMs = 5
    let busy = 0
    let accepted = 0
    let rejectedByServer = 0
    const server = Effect.suspend(() => {
      if (busy >= slots) {
        rejectedByServer++
        return Effect.andThen(
          Effect.sleep(Duration.millis(rejectMs)),
          Effect.fail(new Errors.Overloaded({ reason: "server busy" }))
        )
      }
      busy++
      accepted++
      return Effect.ensuring(
        Effect.sleep(Duration.millis(serviceMs)),
        Effect.sync(() => busy--)
      )
    })
    const limiter = yield* ConcurrencyLimiter.make({ algorithm, maxQueue: 10_000 })
    const limits: Array<number> = []
    const fibers: Array<Fiber.Fiber<void, Errors.Overloaded>> = []
    // TestClock.adjust is the expensive step: requests arrive in bursts of 10 every 10 ms
    for (let t = 0; t < requests; t += 10) {
      for (let i = 0; i < 10; i++) fibers.push(yield* Effect.forkChild(limiter.withLimiter(server)))
      yield* TestClock.adjust(Duration.millis(10))
      limits.push(limiter.limit)
    }
    while (limiter.inFlight > 0 || limiter.queued > 0) {
      yield* TestClock.adjust(Duration.millis(10))
      limits.push(limiter.limit)
    }
    yield* Effect.forEach(fibers, Fiber.await, { discard: true })
    return { accepted, rejectedByServer, limits, inFlight: limiter.inFlight, queued: limiter.queued }
  })

describe("ConcurrencyLimiter in virtual time against an overloaded backend", () => {
  // offered up to 10× the backend's capacity of 10; every algorithm settles near it
  for (const [name, algorithm, maxServerRejections] of [
    ["congestion window (Reno)", CongestionWindow.factory(), 0.1],
    ["congestion window (Tahoe, initial 4)", CongestionWindow.factory({ variant: "tahoe", initial: 4 }), 0.1],
    ["aimd", AimdLimit.factory(), 0.5],
    ["vegas", VegasLimit.factory(), 0.6]
  ] as const) {
    it.effect(`${name}: settles near the capacity, nothing leaks`, () =>
      Effect.gen(function* () {
        const requests = 300
        const run = yield* overload(algorithm, requests)
        // every request either ran on the backend or was rejected by it: none lost, none stuck
        expect(run.accepted + run.rejectedByServer).toBe(requests)
        expect(run.inFlight).toBe(0)
        expect(run.queued).toBe(0)
        expect(run.rejectedByServer).toBeLessThan(requests * maxServerRejections)
        const tail = run.limits.slice(Math.floor(run.limits.length / 2))
        const mean = tail.reduce((a, b) => a + b, 0) / tail.length
        expect(mean).toBeGreaterThanOrEqual(5)
        expect(mean).toBeLessThanOrEqual(15)
      })
    )
  }

  it.effect("is deterministic: the same run gives the same limit trace", () =>
    Effect.gen(function* () {
      const a = yield* overload(CongestionWindow.factory(), 200)
      const b = yield* overload(CongestionWindow.factory(), 200)
      expect(a.limits).toEqual(b.limits)
      expect(a.rejectedByServer).toBe(b.rejectedByServer)
    })
  )
})

import { CircuitBreaker, Ewma, LatencyWindow, RollingCounter } from "@sluice/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { callAllUnbound } from "./unbound.js"

describe("unbound service methods", () => {
  it.effect("CircuitBreaker", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ name: "unbound" })
      expect(yield* Effect.succeed(1).pipe(breaker.withBreaker)).toBe(1)
      const keys = yield* callAllUnbound(breaker, {
        withBreaker: [Effect.succeed(1)],
        pipe: [],
        stateUnsafe: [0],
        isolateUnsafe: [0],
        resetUnsafe: [0]
      })
      expect(keys).toEqual(
        expect.arrayContaining(["withBreaker", "stateUnsafe", "isolateUnsafe", "resetUnsafe"])
      )
    })
  )

  it.effect("Ewma, EwmaRate, RollingCounter, LatencyWindow", () =>
    Effect.gen(function* () {
      const ewma = yield* Ewma.make({ tau: "1 second" })
      yield* Effect.forEach([1, 2, 3], (x) => Effect.sync(() => ewma.updateUnsafe(0, x)))
      const update = ewma.updateUnsafe
      update(10, 4)
      expect(ewma.valueUnsafe()).toBeGreaterThan(0)
      yield* callAllUnbound(ewma, { updateUnsafe: [0, 1], valueUnsafe: [] })
      const rate = yield* Ewma.makeRate({ window: "10 seconds" })
      yield* callAllUnbound(rate, { markUnsafe: [0, 1], rateUnsafe: [0] })
      const counter = yield* RollingCounter.make({ window: "1 second" })
      const add = counter.addUnsafe
      add(0, 2)
      expect(counter.totalUnsafe(0)).toBe(2)
      yield* callAllUnbound(counter, { addUnsafe: [0, 1], totalUnsafe: [0], resetUnsafe: [], pipe: [] })
      const window = yield* LatencyWindow.make({ window: "10 seconds" })
      const record = window.recordUnsafe
      record(0, 5)
      expect(window.countUnsafe(0)).toBe(1)
      yield* callAllUnbound(window, {
        recordUnsafe: [0, 1],
        quantileUnsafe: [0, 0.5],
        countUnsafe: [0],
        resetUnsafe: [],
        pipe: []
      })
    })
  )
})

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
        unsafeState: [0],
        unsafeIsolate: [0],
        unsafeReset: [0]
      })
      expect(keys).toEqual(
        expect.arrayContaining(["withBreaker", "unsafeState", "unsafeIsolate", "unsafeReset"])
      )
    })
  )

  it.effect("Ewma, EwmaRate, RollingCounter, LatencyWindow", () =>
    Effect.gen(function* () {
      const ewma = yield* Ewma.make({ tau: "1 second" })
      yield* Effect.forEach([1, 2, 3], (x) => Effect.sync(() => ewma.unsafeUpdate(0, x)))
      const update = ewma.unsafeUpdate
      update(10, 4)
      expect(ewma.unsafeValue()).toBeGreaterThan(0)
      yield* callAllUnbound(ewma, { unsafeUpdate: [0, 1], unsafeValue: [] })
      const rate = yield* Ewma.makeRate({ window: "10 seconds" })
      yield* callAllUnbound(rate, { unsafeMark: [0, 1], unsafeRate: [0] })
      const counter = yield* RollingCounter.make({ window: "1 second" })
      const add = counter.unsafeAdd
      add(0, 2)
      expect(counter.unsafeTotal(0)).toBe(2)
      yield* callAllUnbound(counter, { unsafeAdd: [0, 1], unsafeTotal: [0], unsafeReset: [], pipe: [] })
      const window = yield* LatencyWindow.make({ window: "10 seconds" })
      const record = window.unsafeRecord
      record(0, 5)
      expect(window.unsafeCount(0)).toBe(1)
      yield* callAllUnbound(window, {
        unsafeRecord: [0, 1],
        unsafeQuantile: [0, 0.5],
        unsafeCount: [0],
        unsafeReset: [],
        pipe: []
      })
    })
  )
})

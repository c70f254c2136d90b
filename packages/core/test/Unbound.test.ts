import { CircuitBreaker } from "@sluice/core"
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
})

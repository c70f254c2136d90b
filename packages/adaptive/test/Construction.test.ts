import { it } from "@effect/vitest"
import { AimdLimit, ConcurrencyLimiter, CongestionWindow, VegasLimit } from "@sluice/adaptive"
import { Effect, Layer, Result } from "effect"
import { describe, expect } from "vitest"

describe("construction never throws (conventions §5)", () => {
  it("a default initial above the user's maxLimit is clamped", () => {
    const factory = VegasLimit.factory({ maxLimit: 8 })
    expect(factory("k").limit).toBe(8)
    expect(AimdLimit.factory({ maxLimit: 8 })("k").limit).toBe(8)
    expect(CongestionWindow.factory({ maxLimit: 8 })("k").limit).toBe(8)
    expect(VegasLimit.makeUnsafe({ minLimit: 30, maxLimit: 40 }).limit).toBe(30)
  })

  it("factories with bad options do not throw when called", () => {
    expect(() => VegasLimit.factory({ initial: 50, maxLimit: 8 })).not.toThrow()
    expect(() => CongestionWindow.factory({ backoffRatio: 2 })).not.toThrow()
    expect(() => AimdLimit.factory({ initial: 2.5 })).not.toThrow()
  })

  it.effect("an explicit bad combination is a typed InvalidOptions from make and layer", () =>
    Effect.gen(function* () {
      const bad = VegasLimit.factory({ initial: 50, maxLimit: 8 })
      const made = yield* Effect.result(ConcurrencyLimiter.make({ algorithm: bad }))
      expect(Result.isFailure(made) && made.failure._tag).toBe("InvalidOptions")
      expect(Result.isFailure(made) && made.failure.message).toMatch(/initial/)
      const service = yield* Effect.result(ConcurrencyLimiter.makeService({ algorithm: bad }))
      expect(Result.isFailure(service) && service.failure._tag).toBe("InvalidOptions")
      const layered = yield* Effect.result(
        Layer.build(ConcurrencyLimiter.layer({ algorithm: bad })).pipe(Effect.scoped)
      )
      expect(Result.isFailure(layered) && layered.failure._tag).toBe("InvalidOptions")
    })
  )

  it("one name per concept: CongestionWindow takes backoffRatio", () => {
    expect(CongestionWindow.makeUnsafe({ backoffRatio: 0.9 }).options.backoffRatio).toBe(0.9)
    expect(CongestionWindow.makeUnsafe().options.maxLimit).toBe(1000)
  })
})

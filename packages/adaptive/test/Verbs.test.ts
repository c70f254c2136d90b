import { it } from "@effect/vitest"
import {
  AdaptiveThrottle,
  ConcurrencyLimiter,
  LoadShedder,
  Pacer,
  ProportionalSampler,
  QpsSensor,
  ThresholdMonitor
} from "@sluice/adaptive"
import { Effect, Layer } from "effect"
import { describe, expect } from "vitest"

const one = Effect.succeed(1)

describe("withX: one verb, self first, data-first and data-last", () => {
  it.effect("every policy", () =>
    Effect.gen(function* () {
      expect(yield* AdaptiveThrottle.withThrottle(one, "k")).toBe(1)
      expect(yield* one.pipe(AdaptiveThrottle.withThrottle("k"))).toBe(1)
      expect(yield* ConcurrencyLimiter.withLimiter(one, "db")).toBe(1)
      expect(yield* one.pipe(ConcurrencyLimiter.withLimiter("db"))).toBe(1)
      expect(yield* one.pipe(ConcurrencyLimiter.withLimiter())).toBe(1)
      const limiter = yield* ConcurrencyLimiter.make()
      expect(yield* ConcurrencyLimiter.withLimiter(one, limiter)).toBe(1)
      expect(yield* one.pipe(ConcurrencyLimiter.withLimiter(limiter))).toBe(1)
      expect(yield* LoadShedder.withShedder(one)).toBe(1)
      expect(yield* one.pipe(LoadShedder.withShedder())).toBe(1)
      const pacer = yield* Pacer.make({ limit: () => 10 })
      expect(yield* Pacer.withPacer(one, pacer)).toBe(1)
      expect(yield* one.pipe(Pacer.withPacer(pacer))).toBe(1)
      expect(yield* ProportionalSampler.withSampler(one, { onSkip: Effect.succeed(0) })).toBe(1)
      expect(yield* one.pipe(ProportionalSampler.withSampler({ onSkip: Effect.succeed(0) }))).toBe(1)
      expect(yield* ThresholdMonitor.withMonitor(one, "save")).toBe(1)
      expect(yield* one.pipe(ThresholdMonitor.withMonitor("save"))).toBe(1)
      const monitor = yield* ThresholdMonitor.ThresholdMonitor
      expect((yield* monitor.stats("save")).operation).toBe("save")
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          AdaptiveThrottle.layer(),
          ConcurrencyLimiter.layer(),
          LoadShedder.layer({ capacity: 10 }),
          ProportionalSampler.layer({ goal: 100 }).pipe(Layer.provide(QpsSensor.layerLocal())),
          ThresholdMonitor.layer({})
        )
      )
    )
  )
})

import { AdaptiveThrottle, ConcurrencyLimiter, CongestionWindow } from "@sluice/adaptive"
import { Admission } from "@sluice/core"
import { Retry, RetryBudget } from "@sluice/retry"
import { Effect, Layer } from "effect"
import { median, timeEffect } from "./measure.js"
const SluiceLayers = Layer.mergeAll(RetryBudget.layer(), AdaptiveThrottle.layer(), ConcurrencyLimiter.layer({ algorithm: CongestionWindow.factory() }))
const program = Effect.gen(function* () {
  const budget = yield* RetryBudget.forKey("bench-client")
  const throttle = yield* AdaptiveThrottle.AdaptiveThrottle
  const limiters = yield* ConcurrencyLimiter.ConcurrencyLimiter
  const work = Effect.succeed(1)
  const trivial = { tryEnter: () => true, enter: () => Effect.succeed(true), settle: () => {} }
  const handlers = { onSuccess: Effect.succeed, onFailure: Effect.failCause }
  const g: Record<string, (e: any) => any> = {
    floor: (w) => Effect.uninterruptibleMask((restore) => Effect.matchCauseEffect(restore(w), handlers)),
    guard0: Admission.guard([]),
    trivial1: Admission.guard([trivial]),
    retryOnly: Retry.make({ maxAttempts: 3, budget }).around([]),
    throttle: Admission.guard([throttle.gate("t")]),
    limiter: Admission.guard([limiters.gate("l")]),
    stack: Retry.make({ maxAttempts: 3, budget }).around([throttle.gate("s"), limiters.gate("s")]),
  }
  const samples: Record<string, number[]> = {}
  for (const [, f] of Object.entries(g)) yield* timeEffect(() => f(work), 100_000)
  for (let r = 0; r < 5; r++) for (const [name, f] of Object.entries(g)) (samples[name] ??= []).push(yield* timeEffect(() => f(work), 200_000))
  for (const [name, v] of Object.entries(samples)) console.log(name.padEnd(10), median(v).toFixed(0))
})
await Effect.runPromise(program.pipe(Effect.provide(SluiceLayers)))

/**
 * Every function on the public http service values works when passed unbound:
 * `call.pipe(stack.run)`, `Effect.forEach(keys, hub.latest)`.
 */
import { AdaptiveThrottle, ConcurrencyLimiter, CongestionWindow } from "@sluice/adaptive"
import { describe, expect, it } from "@effect/vitest"
import { ClientStack, ThrottleSignal } from "@sluice/http"
import { RetryBudget } from "@sluice/retry"
import { Effect, Layer, Option } from "effect"

const Policies = Layer.mergeAll(
  RetryBudget.layer(),
  AdaptiveThrottle.layer(),
  ConcurrencyLimiter.layer({ algorithm: CongestionWindow.factory() })
)

describe("http services, unbound", () => {
  it.effect("ClientStack: run, composed and attempt detached from the stack", () =>
    Effect.gen(function* () {
      const stack = yield* ClientStack.fromContext({ key: "backend", retry: { maxAttempts: 3 } })
      const { attempt, composed, run } = stack
      const call = Effect.succeed(1)
      expect(yield* call.pipe(run)).toBe(1)
      expect(yield* call.pipe(composed)).toBe(1)
      expect(yield* call.pipe(attempt)).toBe(1)
      expect(yield* Effect.forEach([call, call], run)).toEqual([1, 1])
    }).pipe(Effect.provide(Policies))
  )

  it.scoped("ThrottleSignal: publish, unsafePublish and latest detached from the hub", () =>
    Effect.gen(function* () {
      const hub = yield* ThrottleSignal.ThrottleSignal
      const { latest, publish, unsafePublish } = hub
      yield* Effect.forEach(["a", "b"], (key) => publish(key, true))
      unsafePublish("c", false)
      expect(yield* Effect.forEach(["a", "b", "c"], (key) => Effect.sync(() => latest(key)))).toEqual([
        Option.some(true),
        Option.some(true),
        Option.some(false)
      ])
    }).pipe(Effect.provide(ThrottleSignal.layer()))
  )
})

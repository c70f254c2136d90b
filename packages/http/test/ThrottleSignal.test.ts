import { describe, expect, it } from "@effect/vitest"
import { ThrottleSignal } from "@sluice/http"
import { Effect, Option, PubSub } from "effect"

describe("ThrottleSignal", () => {
  it.effect("a subscriber that falls behind a full hub loses the oldest signals, not the newest", () =>
    Effect.gen(function* () {
      const hub = yield* ThrottleSignal.ThrottleSignal
      const subscription = yield* hub.subscribe
      for (let i = 1; i <= 5; i++) hub.publishUnsafe(`k${i}`, i % 2 === 0)
      const kept = yield* PubSub.takeAll(subscription)
      expect(kept.map((s) => s.key)).toEqual(["k4", "k5"])
      expect(hub.latest("k5")).toEqual(Option.some(false))
      expect(hub.latest("k4")).toEqual(Option.some(true))
    }).pipe(Effect.provide(ThrottleSignal.layer({ capacity: 2 })))
  )
})

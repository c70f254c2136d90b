import { describe, expect, it } from "@effect/vitest"
import { ThrottleSignal } from "@sluice/http"
import { Chunk, Effect, Option } from "effect"

describe("ThrottleSignal", () => {
  it.scoped("a subscriber that falls behind a full hub loses the oldest signals, not the newest", () =>
    Effect.gen(function* () {
      const hub = yield* ThrottleSignal.ThrottleSignal
      const subscription = yield* hub.subscribe
      for (let i = 1; i <= 5; i++) hub.unsafePublish(`k${i}`, i % 2 === 0)
      const kept = Chunk.toReadonlyArray(yield* subscription.takeAll)
      expect(kept.map((s) => s.key)).toEqual(["k4", "k5"])
      expect(hub.latest("k5")).toEqual(Option.some(false))
      expect(hub.latest("k4")).toEqual(Option.some(true))
    }).pipe(Effect.provide(ThrottleSignal.layer({ capacity: 2 })))
  )
})

/**
 * Every function on the public http service values works when passed unbound:
 * `Effect.forEach(keys, hub.latest)`.
 */
import { describe, expect, it } from "@effect/vitest"
import { ThrottleSignal } from "@sluice/http"
import { Effect, Option } from "effect"

describe("http services, unbound", () => {
  it.effect("ThrottleSignal: publish, publishUnsafe and latest detached from the hub", () =>
    Effect.gen(function* () {
      const hub = yield* ThrottleSignal.ThrottleSignal
      const { latest, publish, publishUnsafe } = hub
      yield* Effect.forEach(["a", "b"], (key) => publish(key, true))
      publishUnsafe("c", false)
      expect(yield* Effect.forEach(["a", "b", "c"], (key) => Effect.sync(() => latest(key)))).toEqual([
        Option.some(true),
        Option.some(true),
        Option.some(false)
      ])
    }).pipe(Effect.provide(ThrottleSignal.layer()))
  )
})

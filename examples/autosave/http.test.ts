import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { demoHttp } from "./http.js"

describe("examples/autosave over real HTTP (smoke)", () => {
  it.live("the throttle flag travels over HTTP and stretches the editors' intervals", () =>
    Effect.gen(function* () {
      const r = yield* demoHttp({
        seconds: 5,
        editors: 6,
        threshold: 12,
        onAtSecond: 1,
        offAtSecond: 3,
        print: false
      })
      expect(r.onAtSecond).toBe(1)
      expect(r.offAtSecond).toBe(3)
      const [before, , during, , after] = r.perSecond
      expect(before!.throttled).toBe(0)
      expect(before!.saves).toBeGreaterThan(0)
      // while the threshold is on, responses carry the flag and the editors slow down
      expect(r.perSecond[1]!.throttled + during!.throttled).toBeGreaterThan(0)
      expect(Math.max(r.perSecond[1]!.meanIntervalMs, during!.meanIntervalMs)).toBeGreaterThan(125)
      expect(during!.saves).toBeLessThan(before!.saves)
      // a second after switching off, no response carries the flag
      expect(after!.throttled).toBe(0)
      expect(r.perInstance.every((n) => n > 0)).toBe(true)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )
})

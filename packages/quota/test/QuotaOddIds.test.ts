// Client ids with lone UTF-16 surrogates: Redis stores keys as UTF-8, where every lone surrogate
// is U+FFFD; the memory store keys by the JS string. Both must count the same ids as distinct.
import { Quota, QuotaConfig, QuotaStore } from "@sluice/quota"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { transports } from "./quota/transports.js"

const plan: QuotaConfig.PlanInput = {
  tiers: [{ name: "count", algorithm: "sliding-window", limit: 1, period: "1 hour" }]
}
const unique = (name: string) => `test:${name}:${process.pid}:${Math.random().toString(36).slice(2)}:`

// distinct ids that share one UTF-8 rendering (or would, once their surrogates are replaced)
const ids = [
  "\ud800",
  "\ud801",
  "\udc00",
  "\ufffd",
  "a\ud800b",
  "a\udbffb",
  "a\ufffdb",
  "\ud800\ud800",
  "\udc00\ud800",
  "\ufffd\ufffd",
  "x".repeat(300) + "\ud800",
  "x".repeat(300) + "\ud801"
]

/** every id admitted once, then denied: no two ids share a quota */
const eachIdItsOwn = Effect.gen(function* () {
  const first = yield* Effect.forEach(ids, (id) => Quota.check(id))
  expect(first.map((d) => d.allowed)).toEqual(ids.map(() => true))
  expect(first.every((d) => d.source === "store")).toBe(true)
  const second = yield* Effect.forEach(ids, (id) => Quota.check(id))
  expect(second.map((d) => d.allowed)).toEqual(ids.map(() => false))
})

const quotaOn = (store: Layer.Layer<QuotaStore.QuotaStore, unknown>) =>
  Quota.layer({ deadline: "2 seconds" }).pipe(
    Layer.provide(store),
    Layer.provide(QuotaConfig.layer({ default: plan }))
  )

describe("client ids with lone surrogates: each its own quota in every store", () => {
  it.effect("memory store", () => eachIdItsOwn.pipe(Effect.provide(quotaOn(QuotaStore.layerMemory()))))
  for (const transport of transports)
    it.live(`Redis store (${transport.name})`, () =>
      eachIdItsOwn.pipe(Effect.provide(quotaOn(transport.layerStore(unique("odd-ids")))))
    )
})

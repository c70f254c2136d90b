import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { measureGoals } from "./goals.js"

// Seed 1. Only the goals that are met are asserted; the two that are not are pinned at
// their measured figures so a regression shows (see bench/README.md: overload-2000 at 1.0704 ×
// against 1.07, and slots-30 / slots-200 behind cwnd-reno).
describe("tempo against its goals (seed 1)", () => {
  it.effect(
    "meets capacity-drop, many-clients, the failed-attempt cap and three of five variants",
    () =>
      Effect.gen(function* () {
        const goals = yield* measureGoals(1)
        expect(goals.overload2000.failedAttempts).toBeLessThanOrEqual(30)
        expect(goals.capacityDrop.ratio).toBeLessThanOrEqual(1.1)
        expect(goals.capacityDrop.met).toBe(true)
        expect(goals.manyClients.fairness).toBeGreaterThanOrEqual(0.95)
        expect(goals.manyClients.ratio).toBeLessThanOrEqual(1.1)
        expect(goals.manyClients.met).toBe(true)
        const variant = (name: string) => goals.variants.find((v) => v.name === name)!
        for (const name of ["slots-80", "service-1s", "travel-250ms"]) {
          expect(variant(name).tempo.ratio).toBeLessThanOrEqual(variant(name).cwndReno.ratio)
          expect(variant(name).met).toBe(true)
        }
        // Not met (measured): pinned so that they cannot get worse unnoticed.
        expect(goals.overload2000.ratio).toBeLessThan(1.075)
        expect(goals.overload2000.ratio).toBeGreaterThan(1.05)
        expect(variant("slots-30").tempo.ratio).toBeLessThan(variant("slots-30").cwndReno.ratio * 1.02)
        expect(variant("slots-200").tempo.ratio).toBeLessThan(variant("slots-200").cwndReno.ratio * 1.03)
      }),
    120_000
  )
})

import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { overload, propagation, shedding } from "./scenarios.js"
import { makeStack } from "./stack.js"

// Real servers on loopback and the real clock; every scenario gets a fresh stack
// (the clients' congestion windows remember an overload) and closes it at the end.
const fresh = makeStack({ capacity: 20, serviceTime: "20 millis" })

describe("three-tier example (frontend → middle → backend over real HTTP)", () => {
  it.live("backend overloaded: only the middle tier retries, the user gets a don't-retry", () =>
    Effect.gen(function* () {
      const counts = yield* Effect.scoped(Effect.flatMap(fresh, (stack) => overload(stack, 5)))
      expect(counts.userRequests).toBe(5)
      // at most 3 backend hits per user request, though user, frontend and middle all
      // run a 3-attempt retry policy (3³ = 27 without the one-layer rule)
      for (const hits of counts.backendHitsPerRequest) {
        expect(hits).toBeGreaterThanOrEqual(1)
        expect(hits).toBeLessThanOrEqual(3)
      }
      expect(counts.backendHitsPerRequest[0]).toBe(3)
      // the frontend does not retry the middle's don't-retry answer
      expect(counts.middleHitsPerRequest).toEqual([1, 1, 1, 1, 1])
      // the user reads the middle tier's own words: it gave up after its attempts
      expect(counts.outcomes).toEqual({ "DontRetry(attempts)": 5 })
      // the backend saw attempt numbers 0, 1, 2 only: the middle's own retries
      for (const attempt of Object.keys(counts.backendAttempts)) expect(["0", "1", "2"]).toContain(attempt)
      expect(counts.backendAttempts["0"]).toBe(5)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )

  it.live("for comparison: the same stack retrying naively at every layer hits the backend 27 times", () =>
    Effect.gen(function* () {
      const naive = makeStack({ capacity: 20, serviceTime: "20 millis", naive: true })
      const counts = yield* Effect.scoped(
        Effect.flatMap(naive, (stack) => overload(stack, 2, { naive: true }))
      )
      expect(counts.backendHitsPerRequest).toEqual([27, 27])
      expect(counts.middleHitsPerRequest).toEqual([9, 9])
      expect(counts.outcomes).toEqual({ Failed: 2 })
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )

  it.live("criticality set at the frontend reaches the backend; a user's claim is clamped", () =>
    Effect.gen(function* () {
      const counts = yield* Effect.scoped(Effect.flatMap(fresh, propagation))
      expect(counts.seenByBackend).toEqual({
        "/page": "CRITICAL",
        "/prefetch": "SHEDDABLE",
        "/claimed (CRITICAL_PLUS)": "CRITICAL",
        "/claimed (SHEDDABLE_PLUS)": "SHEDDABLE_PLUS"
      })
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )

  it.live("under overload the backend sheds SHEDDABLE first while CRITICAL keeps succeeding", () =>
    Effect.gen(function* () {
      const counts = yield* Effect.scoped(Effect.flatMap(fresh, (stack) => shedding(stack, { requests: 5 })))
      expect(counts.utilization).toBeGreaterThanOrEqual(0.8)
      expect(counts.utilization).toBeLessThan(1)
      expect(counts.ok).toEqual({ "/page": 5, "/prefetch": 0 })
      expect(counts.failed).toEqual({ "/page": 0, "/prefetch": 5 })
      expect(counts.backendShed.CRITICAL).toBe(0)
      expect(counts.backendServed.CRITICAL).toBe(5)
      expect(counts.backendShed.SHEDDABLE).toBeGreaterThanOrEqual(5)
      expect(counts.backendShed.SHEDDABLE).toBeLessThanOrEqual(15)
      expect(counts.backendServed.SHEDDABLE).toBe(0)
      // retries dominate the backend's traffic now: its retryGuard cut the middle's retries short
      expect(counts.backendDontRetry).toBeGreaterThanOrEqual(1)
      expect(counts.backendShed.SHEDDABLE).toBeLessThan(15)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )
})

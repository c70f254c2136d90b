/**
 * The random plans, costs and steps the quota stores are held to the exact reference with, and
 * the comparison itself: shared by the kernel's memory-store test and the binding's Redis tests.
 */
import fc from "fast-check"
import { expect } from "vitest"
import type { StoreResult } from "@sluice/kernel/quota/QuotaPlan"
import type { ExactReference, ExactTier } from "./ExactReference.js"

export const MAX_PRODUCT = 2 ** 52

// rates whose emission interval is not exact in binary, a huge one, and random ones
export const arbGcra = (name: string) =>
  fc
    .oneof(
      fc.constantFrom(
        { limit: 7, periodMs: 1000 },
        { limit: 6, periodMs: 1000 },
        { limit: 3, periodMs: 1000 },
        { limit: 1_000_000_000, periodMs: 3_600_000 },
        { limit: 1000, periodMs: 60_000 }
      ),
      fc.record({ limit: fc.integer({ min: 1, max: 50 }), periodMs: fc.integer({ min: 1, max: 10_000 }) })
    )
    .chain((base) =>
      fc
        .integer({ min: 1, max: Math.min(2 * base.limit, Math.floor(MAX_PRODUCT / base.periodMs)) })
        .map((burst): ExactTier => ({ name, algorithm: "gcra", ...base, burst }))
    )

export const arbWindow = (name: string) =>
  fc
    .oneof(
      fc.constantFrom({ limit: 7, periodMs: 1000 }, { limit: 1_000_000_000, periodMs: 3_600_000 }),
      fc.record({ limit: fc.integer({ min: 1, max: 20 }), periodMs: fc.integer({ min: 1, max: 5000 }) })
    )
    .map((base): ExactTier => ({ name, algorithm: "sliding-window", ...base }))

/** a plan's blockFor (ms): short ones end within a run's steps, long ones outlast several */
export const arbBlock = fc.oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 3000 }))

export const arbPlan = fc
  .integer({ min: 1, max: 3 })
  .chain((n) =>
    fc.tuple(...Array.from({ length: n }, (_, i) => fc.oneof(arbGcra(`t${i}`), arbWindow(`t${i}`))))
  )

/** a cost choice, made concrete against the plan's smallest capacity */
export const arbCost = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ kind: "peek" as const }) },
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 3 }).map((n) => ({ kind: "units" as const, n })) },
  { weight: 2, arbitrary: fc.constantFrom(0.3, 0.5, 1).map((f) => ({ kind: "share" as const, f })) },
  { weight: 1, arbitrary: fc.constant({ kind: "over" as const }) }
)
export type CostChoice = typeof arbCost extends fc.Arbitrary<infer A> ? A : never
export const costOf = (choice: CostChoice, minCap: number) =>
  choice.kind === "peek"
    ? 0
    : choice.kind === "units"
      ? Math.min(choice.n, minCap)
      : choice.kind === "share"
        ? Math.max(1, Math.floor(minCap * choice.f))
        : minCap + 1

export const arbDt = fc.oneof(
  fc.constant(0),
  fc.integer({ min: 0, max: 5 }),
  fc.integer({ min: 0, max: 400 }),
  fc.integer({ min: 0, max: 5000 })
)

export const capacityOf = (tier: ExactTier) =>
  tier.algorithm === "gcra" ? (tier.burst ?? tier.limit) : tier.limit

/** every field of every tier equals the reference; retry-after is the first admitting ms */
export const expectExact = (
  context: string,
  reference: ExactReference,
  now: number,
  cost: number,
  result: StoreResult,
  expected: ReturnType<ExactReference["check"]>
) => {
  expect(result.allowed, context).toBe(expected.allowed)
  expect(
    result.tiers.map((t) => [t.allowed, t.remaining, t.resetMs, t.retryAfterMs]),
    context
  ).toEqual(expected.tiers.map((t) => [t.allowed, t.remaining, t.resetMs, t.retryAfterMs]))
  expect(result.blockedMs ?? 0, context).toBe(expected.blockedMs)
  if (!result.allowed) {
    const retry = Math.max(...result.tiers.filter((t) => !t.allowed).map((t) => t.retryAfterMs))
    if (Number.isFinite(retry)) {
      const units = cost === 0 ? 1 : cost
      expect(reference.passes(now + retry, units), context).toBe(true)
      expect(reference.passes(now + retry - 1, units), context).toBe(false)
    }
  }
}

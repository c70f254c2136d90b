// Smoke test: the overload benchmark runs in its short mode (a real server, a generator
// process, five short phases, the tenants phase, a short closed-loop flood driven by autocannon,
// and the same flood against a route with degraded answers) and prints the JSON bench/README.md quotes. Shape and sanity
// only: goodput and latency depend on the machine, so no goal is asserted.
import { describe, expect, it } from "vitest"
import { median } from "./measure.js"
import { runScript } from "./runScript.js"

const isRatio = (n: unknown) => typeof n === "number" && n >= 0 && n <= 1

describe("bench:overload --quick --json", () => {
  it(
    "prints one JSON object with goodput, per-criticality success, latencies and the unprotected run",
    { timeout: 180_000 },
    async () => {
      const { stdout } = await runScript("bench/overload.ts", ["--json", "--quick"], 170_000)
      const lines = stdout.trim().split("\n")
      expect(lines).toHaveLength(1)
      const result = JSON.parse(lines[0]!)
      expect(Object.keys(result).sort()).toEqual(
        [
          "capacityRps",
          "criticalSuccessRatio",
          "goodputRatio",
          "goodputRps",
          "offeredRps",
          "p99AdmittedMs",
          "p99UnloadedMs",
          "sheddableSuccessRatio",
          "unprotected",
          "mix",
          "fleet",
          "tenants",
          "flood",
          "degraded",
          "machine"
        ].sort()
      )
      expect(Object.keys(result.unprotected).sort()).toEqual(["goodputRps", "p99Ms", "timeouts"])
      expect(result.capacityRps).toBeGreaterThan(0)
      // the generator offered about 10x capacity (open loop, bounded by time and count)
      expect(result.offeredRps).toBeGreaterThan(result.capacityRps * 8)
      expect(result.offeredRps).toBeLessThanOrEqual(result.capacityRps * 10 * 1.05)
      expect(result.goodputRps).toBeGreaterThanOrEqual(0)
      expect(result.goodputRatio).toBeCloseTo(result.goodputRps / result.capacityRps, 2)
      expect(isRatio(result.criticalSuccessRatio)).toBe(true)
      expect(isRatio(result.sheddableSuccessRatio)).toBe(true)
      // the unloaded phase has 2xx answers, so its p99 exists
      expect(result.p99UnloadedMs).toBeGreaterThan(0)
      expect(typeof result.p99AdmittedMs === "number" || result.p99AdmittedMs === null).toBe(true)
      expect(result.unprotected.goodputRps).toBeGreaterThanOrEqual(0)
      expect(result.unprotected.p99Ms).toBeGreaterThan(0)
      expect(Number.isInteger(result.unprotected.timeouts)).toBe(true)
      expect(result.unprotected.timeouts).toBeGreaterThanOrEqual(0)
      // the mix where CRITICAL is within capacity: per-criticality success and the goals
      const mix = result.mix
      expect(mix.shares).toEqual({ CRITICAL: 0.05, DEFAULT: 0.15, SHEDDABLE: 0.8 })
      expect(mix.offeredRps).toBeGreaterThan(result.capacityRps * 8)
      for (const level of ["CRITICAL", "DEFAULT", "SHEDDABLE"]) expect(isRatio(mix.success[level])).toBe(true)
      expect(mix.goodputRatio).toBeCloseTo(mix.goodputRps / result.capacityRps, 2)
      expect(Object.keys(mix.unprotected).sort()).toEqual(
        ["criticalSuccess", "goodputRatio", "goodputRps", "p99Ms", "timeouts"].sort()
      )
      const goals = mix.goals
      expect(goals.goodputRatio).toMatchObject({ min: 0.95, met: goals.goodputRatio.value >= 0.95 })
      expect(goals.criticalSuccessRatio.criticalLoadRatio).toBeCloseTo(0.5, 1)
      expect(goals.criticalSuccessRatio.met).toBe(goals.criticalSuccessRatio.value >= 0.999)
      expect(goals.p99AdmittedOverUnloaded).toMatchObject({
        max: 2,
        met: goals.p99AdmittedOverUnloaded.value <= 2
      })
      expect(goals.met).toBe(
        goals.goodputRatio.met && goals.criticalSuccessRatio.met && goals.p99AdmittedOverUnloaded.met
      )
      // the client fleets: attempts the server saw per operation and per success
      for (const mode of ["sluice", "naive"]) {
        const f = result.fleet[mode]
        expect(f.operations).toBeGreaterThan(0)
        expect(f.ok).toBeLessThanOrEqual(f.operations)
        expect(f.attemptsAtServer).toBeGreaterThanOrEqual(0)
        // at most 3 attempts per operation
        expect(f.attemptsAtServer).toBeLessThanOrEqual(3 * f.operations)
        expect(f.attemptsPerOperation).toBeCloseTo(f.attemptsAtServer / f.operations, 2)
        if (f.ok > 0) expect(f.attemptsPerSuccess).toBeCloseTo(f.attemptsAtServer / f.ok, 2)
        // handler runs at the server for callers that had already given up, started and ended
        const w = f.wastedWork
        expect(Object.keys(w).sort()).toEqual(
          [
            "handlerRuns",
            "startedAfterGiveUp",
            "finishedAfterGiveUp",
            "startedAfterGiveUpShare",
            "finishedAfterGiveUpShare"
          ].sort()
        )
        expect(w.handlerRuns).toBeLessThanOrEqual(f.attemptsAtServer)
        expect(w.startedAfterGiveUp).toBeLessThanOrEqual(w.finishedAfterGiveUp)
        expect(w.finishedAfterGiveUp).toBeLessThanOrEqual(w.handlerRuns)
        expect(isRatio(w.startedAfterGiveUpShare) && isRatio(w.finishedAfterGiveUpShare)).toBe(true)
        expect(w.startedAfterGiveUpShare).toBeCloseTo(w.startedAfterGiveUp / Math.max(1, w.handlerRuns), 3)
      }
      // the tenants: 9 customers within their plans and one at 8x its plan, quota enforced in overload only
      const tenants = result.tenants
      expect(isRatio(tenants.withinPlanSuccess)).toBe(true)
      expect(tenants.goodputRatio).toBeGreaterThanOrEqual(0)
      expect(tenants.offeredRps).toBeGreaterThan(result.capacityRps * 2.5)
      expect(Number.isInteger(tenants.idleOverPlanDenied)).toBe(true)
      expect(tenants.overPlan.ok + tenants.overPlan.denied + tenants.overPlan.refused).toBeLessThanOrEqual(
        tenants.overPlan.sent
      )
      const tg = tenants.goals
      expect(tg.withinPlanSuccess).toMatchObject({ min: 0.99, met: tg.withinPlanSuccess.value >= 0.99 })
      expect(tg.goodputRatio).toMatchObject({ min: 0.95, met: tg.goodputRatio.value >= 0.95 })
      expect(tg.idleOverPlanDenied.max).toBe(0)
      expect(tg.met).toBe(tg.withinPlanSuccess.met && tg.goodputRatio.met && tg.idleOverPlanDenied.met)
      // the closed-loop flood (autocannon) against the README's server, the two bare 503s and Effect's JSON 503
      const flood = result.flood
      expect(Object.keys(flood).sort()).toEqual(
        [
          "seconds",
          "connections",
          "goodputRps",
          "goodputRatio",
          "critical",
          "unloadedP99Ms",
          "refusalsPerSec",
          "costRounds",
          "floor",
          "refusalCostVsEffect",
          "refusalCostVsEffectJson",
          "goals"
        ].sort()
      )
      expect(flood.connections).toEqual({ flood: 64, critical: 4 })
      expect(flood.goodputRatio).toBeCloseTo(flood.goodputRps / result.capacityRps, 2)
      // a hard bound: never more than capacity served per unit of work (with slack for the
      // shortest units, 0.5x the mean, and the run's edges)
      expect(flood.goodputRatio).toBeLessThanOrEqual(2.2)
      expect(flood.critical.served).toBeLessThanOrEqual(flood.critical.total)
      expect(flood.critical.total).toBeGreaterThan(0)
      expect(flood.critical.p50Ms).toBeLessThanOrEqual(flood.critical.p99Ms)
      expect(flood.unloadedP99Ms).toBeGreaterThan(0)
      // the flood was refused (and answered) by all three servers
      expect(flood.refusalsPerSec).toBeGreaterThan(0)
      expect(flood.floor.effectRefusalsPerSec).toBeGreaterThan(0)
      expect(flood.floor.nodeRefusalsPerSec).toBeGreaterThan(0)
      expect(flood.floor.effectJsonRefusalsPerSec).toBeGreaterThan(0)
      // the refusal cost: rounds of the same flood against each server in turn (one in --quick),
      // each round's ratio from its own rates, the goal on the median round
      expect(flood.costRounds.length).toBeGreaterThanOrEqual(1)
      for (const r of flood.costRounds) {
        for (const server of ["sluice", "effect", "effectJson", "node"]) expect(r[server]).toBeGreaterThan(0)
        expect(r.costVsEffect).toBeCloseTo(r.effect / r.sluice, 1)
        expect(r.costVsEffectJson).toBeCloseTo(r.effectJson / r.sluice, 1)
      }
      expect(flood.refusalCostVsEffect).toBe(median(flood.costRounds.map((r: any) => r.costVsEffect)))
      expect(flood.refusalCostVsEffectJson).toBe(median(flood.costRounds.map((r: any) => r.costVsEffectJson)))
      expect(flood.floor.effectRefusalsPerSec).toBe(median(flood.costRounds.map((r: any) => r.effect)))
      const fg = flood.goals
      expect(fg.goodputRatio).toMatchObject({ min: 0.9, met: fg.goodputRatio.value >= 0.9 })
      expect(fg.criticalSuccess).toMatchObject({ min: 1, met: fg.criticalSuccess.value >= 1 })
      expect(fg.criticalP99OverUnloaded).toMatchObject({ max: 2, met: fg.criticalP99OverUnloaded.value <= 2 })
      expect(fg.refusalCostVsEffect).toMatchObject({ max: 2, met: fg.refusalCostVsEffect.value <= 2 })
      expect(fg.met).toBe(
        fg.goodputRatio.met &&
          fg.criticalSuccess.met &&
          fg.criticalP99OverUnloaded.met &&
          fg.refusalCostVsEffect.met
      )
      // degraded answers under the same flood: full + degraded answers per full-answer capacity
      const degraded = result.degraded
      expect(degraded).toMatchObject({ fullMs: 200, degradedMs: 20, capacityRps: result.capacityRps * 1.6 })
      expect(degraded.full + degraded.degraded).toBeGreaterThan(0)
      expect(degraded.answersPerCapacity).toBeCloseTo(degraded.answersRps / degraded.capacityRps, 1)
      // CRITICAL is trusted: it is never degraded below what the server admits
      const dc = degraded.critical
      expect(dc.full + dc.degraded + dc.refused).toBeGreaterThan(0)
      expect(degraded.criticalFullShare).toBeCloseTo(dc.full / (dc.full + dc.degraded + dc.refused), 3)
      const dg = degraded.goals
      expect(dg.answersPerCapacity).toMatchObject({ min: 3, met: dg.answersPerCapacity.value >= 3 })
      expect(dg.criticalFullShare).toMatchObject({ min: 0.999, met: dg.criticalFullShare.value >= 0.999 })
      expect(dg.met).toBe(dg.answersPerCapacity.met && dg.criticalFullShare.met)
      expect(result.machine.cpus).toBeGreaterThan(0)
      expect(result.machine.loadAverage).toHaveLength(3)
    }
  )
})

/**
 * The goals of the rate-paced controller (`tempo`), measured with the real
 * engine: `overload-2000` ≤ 1.07 × optimal with ≤ 30 failed attempts, `capacity-drop`
 * ≤ 1.10 ×, `many-clients` fairness ≥ 0.95 and completion ≤ 1.10 ×, and never worse
 * than `cwnd-reno` on variants of `overload-2000` (30 / 80 / 200 slots, 1 s service,
 * 250 ms travel). Used by `npm run bench:sim -- --json` (seeds 1–5) and by the tests
 * (seed 1).
 */
import { Simulation, Strategy } from "@sluice/simulation"
import { Effect } from "effect"

const base = Simulation.overload2000

/** `overload-2000` with one thing changed. */
export const variants: ReadonlyArray<Simulation.Scenario> = [
  { ...base, name: "slots-30", server: { ...base.server, maxBusy: 30 } },
  { ...base, name: "slots-80", server: { ...base.server, maxBusy: 80 } },
  { ...base, name: "slots-200", server: { ...base.server, maxBusy: 200 } },
  { ...base, name: "service-1s", server: { ...base.server, serviceTime: "1 second" } },
  { ...base, name: "travel-250ms", server: { ...base.server, travelTime: "250 millis" } }
]

const round = (x: number) => Math.round(x * 10_000) / 10_000

export interface Figures {
  readonly ratio: number
  readonly failedAttempts: number
}

export interface GoalReport {
  readonly seed: number
  readonly overload2000: Figures & { readonly met: boolean }
  readonly capacityDrop: Figures & { readonly met: boolean }
  readonly manyClients: Figures & { readonly fairness: number; readonly met: boolean }
  readonly variants: ReadonlyArray<{
    readonly name: string
    readonly tempo: Figures
    readonly cwndReno: Figures
    readonly met: boolean
  }>
}

const figures = (scenario: Simulation.Scenario, strategy: Strategy.Strategy, seed: number) =>
  Effect.map(Simulation.runScenario(scenario, strategy.make, { seed }), (r) => ({
    ratio: round(r.ratioToOptimal),
    failedAttempts: r.failedAttempts,
    fairness: round(r.fairness),
    all: r.succeeded === r.operations
  }))

/** Every goal for one seed, with whether it is met. */
export const measureGoals = (seed: number) =>
  Effect.gen(function* () {
    const tempo = Strategy.tempo
    const o = yield* figures(Simulation.overload2000, tempo, seed)
    const c = yield* figures(Simulation.capacityDrop, tempo, seed)
    const m = yield* figures(Simulation.manyClients, tempo, seed)
    const vs: Array<GoalReport["variants"][number]> = []
    for (const variant of variants) {
      const t = yield* figures(variant, tempo, seed)
      const r = yield* figures(variant, Strategy.cwndReno, seed)
      vs.push({
        name: variant.name,
        tempo: { ratio: t.ratio, failedAttempts: t.failedAttempts },
        cwndReno: { ratio: r.ratio, failedAttempts: r.failedAttempts },
        met: t.all && t.ratio <= r.ratio
      })
    }
    const report: GoalReport = {
      seed,
      overload2000: {
        ratio: o.ratio,
        failedAttempts: o.failedAttempts,
        met: o.all && o.ratio <= 1.07 && o.failedAttempts <= 30
      },
      capacityDrop: { ratio: c.ratio, failedAttempts: c.failedAttempts, met: c.all && c.ratio <= 1.1 },
      manyClients: {
        ratio: m.ratio,
        failedAttempts: m.failedAttempts,
        fairness: m.fairness,
        met: m.all && m.ratio <= 1.1 && m.fairness >= 0.95
      },
      variants: vs
    }
    return report
  })

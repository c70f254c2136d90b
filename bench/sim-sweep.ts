/**
 * How close can the Reno window (docs/ARCHITECTURE.md §5) get to the optimum? `npm run bench:sim-sweep [-- --quick]`.
 *
 * Runs the real `CongestionWindow` (Reno, factor 0.9, unchanged) behind a `ConcurrencyLimiter`
 * with immediate retries, as the demo's `cwnd-reno` strategy, under a grid of `Pacer` settings
 * (gain, slow-start gain, RTT smoothing, initial RTT; pacer inside or outside the limiter; and
 * unpaced), on `overload-2000` and `capacity-drop` in virtual time (seed 1; the runs are
 * deterministic). Prints one JSON object: the goals, the best setting for each, the fewest failed
 * attempts within 1.12 × optimal, and the ten best settings on `overload-2000`.
 */
import { CongestionWindow } from "@sluice/adaptive"
import type { Pacer } from "@sluice/adaptive"
import { Effect } from "effect"
import { runOne } from "../examples/sim/run.js"
import { findScenario } from "../examples/sim/scenarios.js"
import { Strategy } from "@sluice/simulation"
import type { PacerPlacement } from "@sluice/simulation/Strategy"

const quick = process.argv.includes("--quick")

interface Setting {
  readonly placement: PacerPlacement | "unpaced"
  readonly pacing?: Pacer.PacerTuning
}

const settings: Array<Setting> = [{ placement: "unpaced" }]
const grid = quick
  ? {
      placement: ["inside"],
      gain: [0.8, 1],
      slowStartGain: [2],
      smoothing: [0.125],
      initialRtt: [undefined] as Array<undefined>
    }
  : {
      placement: ["inside", "outside"],
      gain: [0.8, 0.9, 0.95, 1, 1.05, 1.1, 1.2],
      slowStartGain: [1, 1.25, 1.5, 2],
      smoothing: [0.125, 1],
      initialRtt: [undefined, "600 millis" as const]
    }
for (const placement of grid.placement as Array<PacerPlacement>)
  for (const gain of grid.gain)
    for (const slowStartGain of grid.slowStartGain)
      for (const smoothing of grid.smoothing)
        for (const initialRtt of grid.initialRtt)
          settings.push({
            placement,
            // outside the limiter the pacer may hold every pending operation
            pacing: {
              gain,
              slowStartGain,
              smoothing,
              maxQueue: 1_000_000,
              ...(initialRtt ? { initialRtt } : {})
            }
          })

const label = ({ pacing, placement }: Setting) =>
  pacing === undefined
    ? placement
    : `${placement} gain=${pacing.gain} slowStartGain=${pacing.slowStartGain} smoothing=${pacing.smoothing}` +
      ` initialRtt=${pacing.initialRtt ?? "-"}`

const ratio = (completion: number, optimal: number) => Math.round((completion / optimal) * 1000) / 1000

const measure = (setting: Setting) =>
  Effect.gen(function* () {
    const name = label(setting)
    const strategy = {
      name,
      description: name,
      make: Strategy.limited(
        () => CongestionWindow.factory({ variant: "reno", backoffRatio: 0.9 }),
        setting.pacing,
        setting.placement === "unpaced" ? undefined : setting.placement
      )
    }
    const overload = yield* runOne(findScenario("overload-2000")!, strategy, { seed: 1 })
    const drop = yield* runOne(findScenario("capacity-drop")!, strategy, { seed: 1 })
    return {
      setting: name,
      overloadRatio: ratio(overload.json.completionSeconds, overload.json.optimalSeconds),
      overloadFailed: overload.json.failedAttempts,
      capacityDropRatio: ratio(drop.json.completionSeconds, drop.json.optimalSeconds)
    }
  })

type Row = Effect.Success<ReturnType<typeof measure>>

const main = Effect.gen(function* () {
  const rows: Array<Row> = []
  for (const setting of settings) rows.push(yield* measure(setting))
  const by = <K extends keyof Row>(key: K) => [...rows].sort((a, b) => +a[key] - +b[key])
  const withinFailed = rows.filter((r) => r.overloadRatio <= 1.12)
  console.log(
    JSON.stringify({
      benchmark: "sim-sweep",
      settings: rows.length,
      goals: { overloadRatio: 1.05, overloadFailed: 20, capacityDropRatio: 1.15 },
      bestOverload: by("overloadRatio")[0],
      bestCapacityDrop: by("capacityDropRatio")[0],
      fewestFailedWithin1_12:
        [...withinFailed].sort((a, b) => a.overloadFailed - b.overloadFailed)[0] ?? null,
      goalsMet: rows.filter(
        (r) => r.overloadRatio <= 1.05 && r.overloadFailed <= 20 && r.capacityDropRatio <= 1.15
      ).length,
      topOverload: by("overloadRatio").slice(0, 10)
    })
  )
})

Effect.runPromise(main).catch((error) => {
  console.error(error)
  process.exit(1)
})

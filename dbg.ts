import { Simulation, Strategy } from "@sluice/simulation"
import { Effect } from "effect"
const name = process.argv[2] ?? "overload-2000"
const seed = Number(process.argv[3] ?? 1)
const t0 = performance.now()
const r = await Effect.runPromise(Simulation.runScenario(Simulation.scenarios[name]!, Strategy.tempo.make, { seed, maxDuration: "120 seconds", onProgress: (ms) => { if (performance.now() - t0 > 20000) { console.log("stuck at", ms); process.exit(1) } } }))
const g = r.timeSeries.gauges
const every = (xs: ReadonlyArray<number> | undefined) => (xs ?? []).filter((_, i) => i % 5 === 0).map((x) => Math.round(x))
console.log(JSON.stringify({ succ: r.succeeded, att: r.attempts, failed: r.failedAttempts, ratio: +(r.ratioToOptimal.toFixed(4)), fair: +r.fairness.toFixed(4), timedOut: r.timedOut, wall: Math.round(performance.now() - t0) }))
if (process.argv[4]) { console.log("cwnd", every(g.cwnd).join(" ")); console.log("busy", every(g.busy).join(" ")); console.log("rej", (r.timeSeries.counters.rejections ?? []).map((x, i) => x > 0 ? `${(i / 10).toFixed(1)}:${x}` : "").filter(Boolean).join(" ")) }

import { ConcurrencyLimiter, Pacer, Tempo } from "@sluice/adaptive"
import { Simulation } from "@sluice/simulation"
import { Retry } from "@sluice/retry"
import { Effect, Schedule } from "effect"
let tempo: Tempo.Tempo | undefined
let limiter: ConcurrencyLimiter.Limiter | undefined
let pacer: Pacer.Pacer | undefined
const t0 = performance.now()
let last = 0
const make = () => Effect.gen(function* () {
  limiter = yield* ConcurrencyLimiter.make({ key: "c", algorithm: () => (tempo = Tempo.unsafeMake()), maxQueue: 1e6 })
  pacer = yield* Pacer.forLimiter(limiter, { maxQueue: 1e6 })
  const retry = Retry.policy({ maxAttempts: 1e9, schedule: Schedule.forever })
  return { run: (a: any) => retry(pacer!.run(limiter!.run(a))) } as Simulation.Client
})
await Effect.runPromise(Simulation.runScenario(Simulation.overload2000, make, { seed: 1, maxDuration: "30 seconds", onProgress: (ms) => {
  if (ms - last >= 100 || performance.now() - t0 > 5000) { last = ms; console.log(ms.toFixed(1), "w", tempo!.window.toFixed(1), tempo!.phase, "lim", limiter!.limit, "inF", limiter!.inFlight, "lq", limiter!.queued, "pq", pacer!.queued, "int", pacer!.interval.toFixed(2), "next", pacer!.nextDeparture.toFixed(1), "timer", tempo!.nextTimer) }
  if (performance.now() - t0 > 5200) process.exit(1) } }))

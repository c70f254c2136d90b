/**
 * The `workers` scenario: workers that do not know how many they are keep a
 * backend at a goal QPS together, with `ProportionalSampler`s reading one global
 * `QpsSensor`.
 *
 * - `workers` workers (default 10) each receive `incomingPerWorker` calls per second
 *   (30, evenly spread) and send each through their own sampler (goal `goal` = 100/s,
 *   `updatePeriod` 5 s with ±10% jitter from the seeded `Random`); skipped calls are
 *   dropped (a server would answer 204).
 * - The sensor is the in-memory stand-in for `RedisQpsSensor`: every worker's sensor
 *   counts into one shared `QpsSensor.MemoryStore` of per-second counters and reads
 *   the average of the last two complete seconds.
 * - At `joinAt` (120 s) as many workers again join (starting at `joinInitialRatio`,
 *   0.02, so they do not flood the backend before their first update); at `leaveAt`
 *   (240 s) half of all workers leave (the oldest ones, which carry most of the
 *   traffic: the harder case).
 *
 * Measured QPS is what the global sensor measures: the calls that reached the
 * backend in the last two complete virtual seconds, averaged (raw per-second counts
 * are also in the report). For each change the report gives `settleSeconds` (until
 * every later measurement before the next change is within ±5% of the goal), the
 * same in update periods, `overshootPct` (largest excess of the measured QPS over
 * the goal after the change) and the mean absolute error once settled.
 */
import { ProportionalSampler, QpsSensor } from "@sluice/adaptive"
import { Simulation } from "@sluice/simulation"
import type { Options } from "@sluice/core"
import type { Scenario } from "../scenarios.js"
import type { Strategy } from "@sluice/simulation/Strategy"
import { Clock, Duration, Effect, Fiber, Random } from "effect"

export interface WorkersOptions {
  readonly workers?: number
  readonly incomingPerWorker?: number
  readonly goal?: number
  readonly updatePeriod?: Duration.Input
  readonly jitter?: number
  readonly sensorWindow?: number
  readonly joinAt?: Duration.Input
  readonly leaveAt?: Duration.Input
  readonly joinInitialRatio?: number
  readonly leaving?: "oldest" | "newest"
  readonly duration?: Duration.Input
  readonly seed?: number
  readonly onProgress?: (elapsedMillis: number) => void
}

export interface PhaseReport {
  /** What changed, and when (seconds). */
  readonly change: "start" | "join" | "leave"
  readonly atSeconds: number
  readonly workersAfter: number
  readonly settleSeconds: number | undefined
  readonly settlePeriods: number | undefined
  readonly overshootPct: number
  /** Mean |measured − goal| / goal once settled, in percent. */
  readonly steadyErrorPct: number | undefined
}

export interface WorkersReport {
  readonly goal: number
  readonly updatePeriodSeconds: number
  /** Calls that reached the backend, per virtual second. */
  readonly qps: ReadonlyArray<number>
  /** Measured QPS at the start of each second: the mean of the two seconds before. */
  readonly measured: ReadonlyArray<number>
  readonly offered: number
  readonly sent: number
  readonly phases: ReadonlyArray<PhaseReport>
  /** Worst over the join and leave changes (the cold start is reported in `phases`). */
  readonly settleSeconds: number | undefined
  readonly overshootPct: number
  readonly steadyErrorPct: number
  readonly elapsedMillis: number
  readonly timeSeries: Simulation.TimeSeries
}

const millis = (d: Duration.Input) => Duration.toMillis(Duration.fromInputUnsafe(d))

export const runWorkers = (
  options: WorkersOptions = {}
): Effect.Effect<WorkersReport, Options.InvalidOptions> =>
  Effect.gen(function* () {
    const initialWorkers = options.workers ?? 10
    const incoming = options.incomingPerWorker ?? 30
    const goal = options.goal ?? 100
    const periodMs = millis(options.updatePeriod ?? "5 seconds")
    const joinAt = millis(options.joinAt ?? "120 seconds")
    const leaveAt = millis(options.leaveAt ?? "240 seconds")
    const duration = millis(options.duration ?? "360 seconds")
    const seconds = Math.ceil(duration / 1000)
    const perSecond = new Array<number>(seconds).fill(0)
    let offered = 0
    let sent = 0
    const sliceMs = 100
    const perSlice = (incoming * sliceMs) / 1000

    const program = Effect.gen(function* () {
      const recorder = yield* Simulation.Recorder
      const countSent = recorder.counterUnsafe("sent")
      const countSkipped = recorder.counterUnsafe("skipped")
      const store = QpsSensor.makeMemoryStore()
      const samplers: Array<ProportionalSampler.Service> = []
      recorder.gaugeUnsafe("meanRatio", () =>
        samplers.length === 0 ? 0 : samplers.reduce((a, s) => a + s.ratioUnsafe(), 0) / samplers.length
      )

      const worker = (index: number, initialRatio: number) =>
        Effect.gen(function* () {
          const sensor = yield* QpsSensor.makeMemory({ store, window: options.sensorWindow ?? 2 })
          const sampler = yield* ProportionalSampler.makeWith(
            {
              name: `worker-${index}`,
              goal,
              updatePeriod: Duration.millis(periodMs),
              jitter: options.jitter ?? 0.1,
              initialRatio
            },
            sensor
          )
          samplers.push(sampler)
          yield* Effect.addFinalizer(() => Effect.sync(() => samplers.splice(samplers.indexOf(sampler), 1)))
          const offset = yield* Random.nextBetween(0, sliceMs)
          yield* Effect.sleep(Duration.millis(offset))
          for (;;) {
            const now = yield* Clock.currentTimeMillis
            for (let i = 0; i < perSlice; i++) {
              offered++
              if (sampler.sampleUnsafe(now)) {
                sent++
                countSent()
                const s = Math.floor(now / 1000)
                if (s < seconds) perSecond[s]!++
              } else {
                countSkipped()
              }
            }
            yield* Effect.sleep(Duration.millis(sliceMs))
          }
        }).pipe(Effect.scoped)

      const fibers: Array<Fiber.Fiber<never, Options.InvalidOptions>> = []
      for (let i = 0; i < initialWorkers; i++) fibers.push(yield* Effect.forkChild(worker(i, 1)))
      yield* Effect.sleep(Duration.millis(joinAt))
      for (let i = 0; i < initialWorkers; i++) {
        fibers.push(yield* Effect.forkChild(worker(initialWorkers + i, options.joinInitialRatio ?? 0.02)))
      }
      yield* Effect.sleep(Duration.millis(leaveAt - joinAt))
      const half = Math.floor(fibers.length / 2)
      const leaving =
        (options.leaving ?? "oldest") === "oldest" ? fibers.splice(0, half) : fibers.splice(half)
      for (const f of leaving) yield* Fiber.interrupt(f)
      yield* Effect.sleep(Duration.millis(duration - leaveAt))
      for (const f of fibers) yield* Fiber.interrupt(f)
    })

    const result = yield* Simulation.run(program, {
      seed: options.seed ?? 1,
      resolution: "1 second",
      onProgress: options.onProgress
    })
    if (result.exit._tag === "Failure") return yield* Effect.die(result.exit.cause)

    const measured = perSecond.map((_, s) =>
      s < 2 ? perSecond[0]! : (perSecond[s - 1]! + perSecond[s - 2]!) / 2
    )
    const phase = (
      change: PhaseReport["change"],
      at: number,
      end: number,
      workersAfter: number
    ): PhaseReport => {
      const from = Math.floor(at / 1000)
      const to = Math.floor(end / 1000)
      const inBand = (q: number) => Math.abs(q - goal) <= 0.05 * goal
      let settled: number | undefined = undefined
      for (let s = to - 1; s >= from; s--) {
        if (!inBand(measured[s]!)) break
        settled = s
      }
      let overshoot = 0
      for (let s = from; s < to; s++) overshoot = Math.max(overshoot, measured[s]! - goal)
      const steady = settled === undefined ? [] : measured.slice(settled, to)
      const settleSeconds = settled === undefined ? undefined : settled - from
      return {
        change,
        atSeconds: at / 1000,
        workersAfter,
        settleSeconds,
        settlePeriods: settleSeconds === undefined ? undefined : settleSeconds / (periodMs / 1000),
        overshootPct: (100 * overshoot) / goal,
        steadyErrorPct:
          steady.length === 0
            ? undefined
            : (100 * steady.reduce((a, q) => a + Math.abs(q - goal), 0)) / steady.length / goal
      }
    }
    const phases = [
      phase("start", 0, joinAt, initialWorkers),
      phase("join", joinAt, leaveAt, 2 * initialWorkers),
      phase("leave", leaveAt, duration, initialWorkers)
    ]
    const changes = phases.slice(1)
    const settles = changes.map((p) => p.settleSeconds)
    return {
      goal,
      updatePeriodSeconds: periodMs / 1000,
      qps: perSecond,
      measured,
      offered,
      sent,
      phases,
      settleSeconds: settles.some((s) => s === undefined)
        ? undefined
        : Math.max(...(settles as Array<number>)),
      overshootPct: Math.max(...changes.map((p) => p.overshootPct)),
      steadyErrorPct: Math.max(...changes.map((p) => p.steadyErrorPct ?? Number.POSITIVE_INFINITY)),
      elapsedMillis: result.elapsedMillis,
      timeSeries: result.timeSeries
    }
  })

/**
 * The workers of this scenario, as the CLI reports them; the scenario builds them
 * itself, so there is no workload client to make.
 */
export const workersStrategy: Strategy = {
  name: "proportional-sampler",
  description: "each worker sends with a ProportionalSampler (goal 100/s, 5 s updates) on a shared sensor",
  make: () => Effect.die(new Error("the workers scenario builds its own workers"))
}

/** `npm run sim -- --scenario workers --json` */
export const workersScenario: Scenario = {
  name: "workers",
  description: "10 workers × 30/s share a 100/s goal; 10 more join at 120 s, the oldest half leaves at 240 s",
  builtInStrategy: workersStrategy,
  run: (_strategy, options) =>
    Effect.map(
      runWorkers({
        ...(typeof options.seed === "number" ? { seed: options.seed } : {}),
        ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {})
      }),
      (r) => ({
        // offered calls; the sampled-in ones reached the backend, the rest were skipped (204)
        operations: r.offered,
        succeeded: r.sent,
        attempts: r.sent,
        failedAttempts: 0,
        completionMillis: r.elapsedMillis,
        optimalMillis: r.elapsedMillis,
        settleSeconds: r.settleSeconds,
        overshootPct: r.overshootPct,
        steadyErrorPct: r.steadyErrorPct,
        timeSeries: r.timeSeries,
        detail: { ...r, timeSeries: undefined }
      })
    )
}

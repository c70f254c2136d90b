/**
 * The `autosave` scenario: clients auto-saving with `AimdInterval` against three
 * server instances whose `ThresholdMonitor`s set the throttle flag.
 *
 * - `clients` clients (default 8) each want to save every `preferredInterval`
 *   (default 500 ms) after the previous save returned (70 ms), together about 14
 *   saves per second. Each save travels
 *   `travel` (25 ms) to one instance (round robin), is served in `serviceTime`
 *   (20 ms, recorded as a success by that instance's monitor), and the answer
 *   carries the instance's throttle flag back (`travel` again). The client feeds
 *   the flag to its `AimdInterval` through `scheduleFrom` and waits the adapted
 *   interval, stretched by ±5% jitter (`jitteredWith` below).
 * - Each instance's monitor has `instances: 3`; at `onAt` (60 s) the service-wide
 *   rate threshold `threshold` (6/s, so 2/s per instance) is switched on with
 *   `setThresholds`, and at `offAt` (300 s) it is removed again.
 * - The monitors' rate is an exponentially weighted rate over `monitorWindow`
 *   (default 5 s, tick 250 ms). The library default is five minutes, like a load
 *   average; the 60-second settling goal cannot be met through a five-minute
 *   average (the throttle keeps firing for minutes after the clients have backed
 *   off), so the scenario sets a window an order of magnitude shorter than the goal.
 *   `monitorWindow: "5 minutes"` reproduces that failure.
 * - The clients' `AimdInterval` runs in `rateStep` mode by default (rate + 0.1/s per
 *   second waited while clear, interval × `factor` on throttle, `factor` 1.5 here:
 *   with the library default 2 each throttle takes a bigger bite, and single 10 s
 *   bins leave the ±10% band now and then). `mode: "step"` uses the interval-step
 *   rule (interval − `step` on clear) instead, for comparison.
 *
 * Report: aggregate QPS per `bin` (10 s), `settleSeconds` (from switching on until
 * every later bin up to `offAt` is within ±10% of the threshold), `overshootPct`
 * (largest excess above the threshold after settling), `steadyErrorPct` (error of
 * the mean QPS from `onAt + 60 s` to `offAt`), `fairness` (Jain's index of the
 * clients' save rates over that span) and `recoverySeconds` (from switching off
 * until a bin reaches 90% of the preferred rate).
 */
import { AimdInterval, ThresholdMonitor } from "@sluice/adaptive"
import { Simulation } from "@sluice/simulation"
import type { Options } from "@sluice/core"
import type { Scenario } from "../scenarios.js"
import type { Strategy } from "@sluice/simulation/Strategy"
import { Clock, Duration, Effect, Random, Schedule } from "effect"

export interface AutosaveOptions {
  readonly clients?: number
  readonly preferredInterval?: Duration.Input
  readonly maxInterval?: Duration.Input
  readonly mode?: "rateStep" | "step"
  readonly factor?: number
  readonly rateStep?: number
  readonly step?: Duration.Input
  readonly instances?: number
  readonly threshold?: number
  readonly monitorWindow?: Duration.Input
  readonly monitorTick?: Duration.Input
  readonly onAt?: Duration.Input
  readonly offAt?: Duration.Input
  readonly duration?: Duration.Input
  readonly travel?: Duration.Input
  readonly serviceTime?: Duration.Input
  readonly bin?: Duration.Input
  readonly seed?: number
  readonly onProgress?: (elapsedMillis: number) => void
}

export interface AutosaveReport {
  readonly clients: number
  readonly preferredQps: number
  readonly threshold: number
  readonly saves: number
  readonly throttledResponses: number
  /** Aggregate saves per second, per bin (`binSeconds` wide, starting at 0). */
  readonly qps: ReadonlyArray<number>
  readonly binSeconds: number
  readonly settleSeconds: number | undefined
  readonly overshootPct: number
  readonly steadyErrorPct: number
  readonly steadyQps: number
  readonly fairness: number
  /** Each client's saves per second over the steady span. */
  readonly clientQps: ReadonlyArray<number>
  readonly recoverySeconds: number | undefined
  readonly recoveredQps: number
  readonly elapsedMillis: number
  readonly timeSeries: Simulation.TimeSeries
}

/**
 * Stretches every delay of a schedule by a factor drawn uniformly from [min, max] (the
 * same draw as Effect's `Schedule.jittered`, which fixes the range at 0.8–1.2).
 */
const jitteredWith =
  (min: number, max: number) =>
  <Output, Input, Error, Env>(self: Schedule.Schedule<Output, Input, Error, Env>) =>
    Schedule.modifyDelay(self, ({ duration }) =>
      Effect.map(Random.next, (random) => {
        const d = Duration.toMillis(duration)
        return Duration.millis(d * min * (1 - random) + d * max * random)
      })
    )

const millis = (d: Duration.Input) => Duration.toMillis(Duration.fromInputUnsafe(d))

export const runAutosave = (
  options: AutosaveOptions = {}
): Effect.Effect<AutosaveReport, Options.InvalidOptions> =>
  Effect.gen(function* () {
    const clients = options.clients ?? 8
    const preferredMs = millis(options.preferredInterval ?? "500 millis")
    const instances = options.instances ?? 3
    const threshold = options.threshold ?? 6
    const onAt = millis(options.onAt ?? "60 seconds")
    const offAt = millis(options.offAt ?? "300 seconds")
    const duration = millis(options.duration ?? "420 seconds")
    const travel = Duration.fromInputUnsafe(options.travel ?? "25 millis")
    const serviceMs = millis(options.serviceTime ?? "20 millis")
    const binMs = millis(options.bin ?? "10 seconds")
    const mode = options.mode ?? "rateStep"

    const saveTimes: Array<Array<number>> = Array.from({ length: clients }, () => [])
    let throttledResponses = 0

    const program = Effect.gen(function* () {
      const recorder = yield* Simulation.Recorder
      const countSave = recorder.counterUnsafe("saves")
      const countThrottled = recorder.counterUnsafe("throttled")
      const monitors = yield* Effect.all(
        Array.from({ length: instances }, (_, i) =>
          ThresholdMonitor.make({
            name: `autosave-${i}`,
            instances,
            window: options.monitorWindow ?? "5 seconds",
            tick: options.monitorTick ?? "250 millis"
          })
        )
      )
      let next = 0
      const controllers = yield* Effect.all(
        Array.from({ length: clients }, (_, i) =>
          AimdInterval.make({
            name: `autosave-client-${i}`,
            min: preferredMs,
            max: options.maxInterval ?? "30 seconds",
            factor: options.factor ?? 1.5,
            ...(mode === "rateStep"
              ? { rateStep: options.rateStep ?? 0.1 }
              : { step: options.step ?? "250 millis" })
          })
        )
      )
      controllers.forEach((aimd, i) => recorder.gaugeUnsafe(`interval.${i}`, () => aimd.intervalUnsafe()))

      /** One save: to an instance and back, with the instance's throttle flag. */
      const save = (client: number) =>
        Effect.gen(function* () {
          yield* Effect.sleep(travel)
          const monitor = monitors[next++ % instances]!
          const arrived = yield* Clock.currentTimeMillis
          saveTimes[client]!.push(arrived)
          countSave()
          yield* Effect.sleep(Duration.millis(serviceMs))
          const now = yield* Clock.currentTimeMillis
          monitor.recordUnsafe("save", now, serviceMs)
          const throttle = monitor.exceededUnsafe("save", now)
          if (throttle) {
            throttledResponses++
            countThrottled()
          }
          yield* Effect.sleep(travel)
          return { throttle }
        })

      const switches = Effect.gen(function* () {
        yield* Effect.sleep(Duration.millis(onAt))
        for (const m of monitors) yield* m.setThresholds({ rate: threshold })
        yield* Effect.sleep(Duration.millis(offAt - onAt))
        for (const m of monitors) yield* m.setThresholds({})
      })

      yield* Effect.forkScoped(switches)
      for (let i = 0; i < clients; i++) {
        const start = Effect.flatMap(Random.nextBetween(0, preferredMs), (offset) =>
          Effect.sleep(Duration.millis(offset))
        )
        const loop = Effect.repeat(
          save(i),
          controllers[i]!.scheduleFrom((r: { readonly throttle: boolean }) => r.throttle).pipe(
            jitteredWith(0.95, 1.05)
          )
        )
        yield* Effect.forkScoped(Effect.andThen(start, loop))
      }
      yield* Effect.sleep(Duration.millis(duration))
    }).pipe(Effect.scoped)

    const result = yield* Simulation.run(program, {
      seed: options.seed ?? 1,
      resolution: "1 second",
      onProgress: options.onProgress
    })
    if (result.exit._tag === "Failure") return yield* Effect.die(result.exit.cause)

    const bins = Math.ceil(duration / binMs)
    const qps = new Array<number>(bins).fill(0)
    for (const times of saveTimes)
      for (const t of times) if (t < duration) qps[Math.floor(t / binMs)]! += 1000 / binMs
    const lo = threshold * 0.9
    const hi = threshold * 1.1
    const onBin = Math.ceil(onAt / binMs)
    const offBin = Math.floor(offAt / binMs)
    let settleBin: number | undefined = undefined
    for (let b = offBin - 1; b >= onBin; b--) {
      if (qps[b]! < lo || qps[b]! > hi) break
      settleBin = b
    }
    const settleSeconds = settleBin === undefined ? undefined : (settleBin * binMs - onAt) / 1000
    let overshoot = 0
    if (settleBin !== undefined) {
      for (let b = settleBin; b < offBin; b++) overshoot = Math.max(overshoot, qps[b]! - threshold)
    }
    const steadyFrom = onAt + 60_000
    const steadySeconds = (offAt - steadyFrom) / 1000
    const clientQps = saveTimes.map(
      (ts) => ts.filter((t) => t >= steadyFrom && t < offAt).length / steadySeconds
    )
    const steadyQps = clientQps.reduce((a, b) => a + b, 0)
    // what the clients send unthrottled, measured before the threshold is switched on
    const before = qps.slice(1, Math.floor(onAt / binMs))
    const preferredQps = before.reduce((a, b) => a + b, 0) / Math.max(1, before.length)
    let recoverySeconds: number | undefined = undefined
    for (let b = Math.ceil(offAt / binMs); b < bins; b++) {
      if (qps[b]! >= 0.9 * preferredQps) {
        recoverySeconds = ((b + 1) * binMs - offAt) / 1000
        break
      }
    }
    const lastBins = qps.slice(Math.max(Math.ceil(offAt / binMs), bins - 6))
    return {
      clients,
      preferredQps,
      threshold,
      saves: saveTimes.reduce((n, ts) => n + ts.length, 0),
      throttledResponses,
      qps,
      binSeconds: binMs / 1000,
      settleSeconds,
      overshootPct: (100 * overshoot) / threshold,
      steadyErrorPct: (100 * Math.abs(steadyQps - threshold)) / threshold,
      steadyQps,
      fairness: Simulation.jainFairness(clientQps),
      clientQps,
      recoverySeconds,
      recoveredQps: lastBins.reduce((a, b) => a + b, 0) / Math.max(1, lastBins.length),
      elapsedMillis: result.elapsedMillis,
      timeSeries: result.timeSeries
    }
  })

/**
 * The clients of this scenario, as the CLI reports them; the scenario builds them
 * itself, so there is no workload client to make.
 */
export const autosaveStrategy: Strategy = {
  name: "aimd-interval",
  description:
    "clients pace their saves with AimdInterval (rateStep 0.1/s², factor 1.5) on the throttle flag",
  make: () => Effect.die(new Error("the autosave scenario builds its own clients"))
}

/** `npm run sim -- --scenario autosave --json` */
export const autosaveScenario: Scenario = {
  name: "autosave",
  description:
    "8 clients auto-saving (~14/s) against 3 instances; a 6/s threshold (2 per instance) is on from 60 s to 300 s",
  builtInStrategy: autosaveStrategy,
  run: (_strategy, options) =>
    Effect.map(
      runAutosave({
        ...(typeof options.seed === "number" ? { seed: options.seed } : {}),
        ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {})
      }),
      (r) => ({
        // every save is answered; throttling is a flag on a success, not a failure
        operations: r.saves,
        succeeded: r.saves,
        attempts: r.saves,
        failedAttempts: 0,
        // a control loop has no optimal completion: both are the length of the run
        completionMillis: r.elapsedMillis,
        optimalMillis: r.elapsedMillis,
        fairness: r.fairness,
        settleSeconds: r.settleSeconds,
        overshootPct: r.overshootPct,
        steadyErrorPct: r.steadyErrorPct,
        timeSeries: r.timeSeries,
        detail: { ...r, timeSeries: undefined }
      })
    )
}

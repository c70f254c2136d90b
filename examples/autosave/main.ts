/**
 * Auto-save back-pressure, end to end, in one process.
 *
 *   npm run example:autosave            (about 24 s of real time)
 *   npm run example:autosave -- --seconds 40
 *   npm run example:autosave -- --http    (over real HTTP with @sluice/http, see http.ts)
 *
 * Eight editor clients auto-save with an `AimdInterval` (preferred: every 125 ms
 * after the previous save came back). Three server instances behind a round-robin
 * balancer handle `save`; each times it with a `ThresholdMonitor` and puts the
 * monitor's verdict on the response as the throttle flag (on HTTP that is the
 * `x-sluice-throttle: 1` header). After a quarter of the run an operator switches
 * on a service-wide rate threshold of 24 saves/s (8 per instance, `instances: 3`);
 * after two thirds it is switched off again. Watch the aggregate rate drop to the
 * threshold, the clients' intervals stretch by the same amount, and the traffic
 * come back when the threshold goes.
 *
 * Everything runs on Effect's `Clock`, so the same program runs in virtual time
 * (the smoke test drives it with the simulation engine).
 */
import { ThresholdMonitor } from "@sluice/adaptive"
import { Simulation } from "@sluice/simulation"
import type { Options } from "@sluice/core"
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { Clock, Console, Duration, Effect, Random } from "effect"
import { pathToFileURL } from "node:url"
import { jittered, makeEditorIntervals } from "./editors.js"
import { demoHttp } from "./http.js"

export interface DemoOptions {
  readonly seconds?: number
  readonly clients?: number
  /** Service-wide saves per second allowed while the threshold is on. */
  readonly threshold?: number
  /** Print a line per second (default true). */
  readonly print?: boolean
}

export interface SecondReport {
  readonly second: number
  readonly thresholdOn: boolean
  readonly saves: number
  readonly throttled: number
  readonly meanIntervalMs: number
}

export interface DemoReport {
  readonly threshold: number
  readonly onAtSecond: number
  readonly offAtSecond: number
  readonly perSecond: ReadonlyArray<SecondReport>
  /** Saves per second of each client while the threshold was on (after 2 s of settling). */
  readonly clientRates: ReadonlyArray<number>
  readonly fairness: number
}

const INSTANCES = 3
const OPERATION = "save"

/** A server instance: handles a save and answers with its monitor's throttle flag. */
const makeInstance = (index: number) =>
  Effect.map(
    ThresholdMonitor.make({
      name: `autosave-demo-${index}`,
      instances: INSTANCES,
      window: "1250 millis",
      tick: "62 millis"
    }),
    (monitor) => ({
      monitor,
      handleSave: Effect.gen(function* () {
        yield* monitor.withMonitor(Effect.sleep("5 millis"), OPERATION) // write the document
        return { throttle: yield* monitor.exceeded(OPERATION) }
      })
    })
  )

export const demo = (options: DemoOptions = {}): Effect.Effect<DemoReport, Options.InvalidOptions> =>
  Effect.gen(function* () {
    const seconds = options.seconds ?? 24
    const clients = options.clients ?? 8
    const threshold = options.threshold ?? 24
    const onAt = Math.round(seconds / 4)
    const offAt = Math.round((seconds * 2) / 3)
    const print = options.print ?? true

    const instances = yield* Effect.all(Array.from({ length: INSTANCES }, (_, i) => makeInstance(i)))
    let next = 0
    const network = Duration.millis(6)
    /** The balancer: the round trip to one instance and back. */
    const callSave = Effect.gen(function* () {
      yield* Effect.sleep(network)
      const answer = yield* instances[next++ % INSTANCES]!.handleSave
      yield* Effect.sleep(network)
      return answer
    })

    const start = yield* Clock.currentTimeMillis
    const perSecond: Array<{ saves: number; throttled: number; meanIntervalMs: number }> = Array.from(
      { length: seconds },
      () => ({ saves: 0, throttled: 0, meanIntervalMs: 0 })
    )
    const clientSaves = Array.from({ length: clients }, () => 0)
    const aimds = yield* makeEditorIntervals(clients)

    const client = (i: number) => {
      const save = Effect.gen(function* () {
        const answer = yield* callSave
        const now = yield* Clock.currentTimeMillis
        const s = Math.floor((now - start) / 1000)
        if (s < seconds) {
          perSecond[s]!.saves++
          if (answer.throttle) perSecond[s]!.throttled++
          if (s >= onAt + 2 && s < offAt) clientSaves[i]!++
        }
        return answer
      })
      return Effect.flatMap(Random.nextBetween(0, 125), (offset) =>
        Effect.andThen(
          Effect.sleep(Duration.millis(offset)),
          Effect.repeat(
            save,
            aimds[i]!.scheduleFrom((a: { readonly throttle: boolean }) => a.throttle).pipe(jittered)
          )
        )
      )
    }

    const operator = Effect.gen(function* () {
      yield* Effect.sleep(Duration.seconds(onAt))
      for (const { monitor } of instances) yield* monitor.setThresholds({ rate: threshold })
      if (print)
        yield* Console.log(
          `-- ${onAt}s: threshold on: ${threshold} saves/s in total, ${threshold / INSTANCES} per instance`
        )
      yield* Effect.sleep(Duration.seconds(offAt - onAt))
      for (const { monitor } of instances) yield* monitor.setThresholds({})
      if (print) yield* Console.log(`-- ${offAt}s: threshold off`)
    })

    const reporter = Effect.gen(function* () {
      for (let s = 0; s < seconds; s++) {
        yield* Effect.sleep("1 second")
        const row = perSecond[s]!
        const mean = aimds.reduce((a, x) => a + x.intervalUnsafe(), 0) / aimds.length
        row.meanIntervalMs = mean
        if (print) {
          const bar = "#".repeat(Math.round(row.saves / 2))
          yield* Console.log(
            `${String(s + 1).padStart(3)}s  ${String(row.saves).padStart(3)} saves/s  throttled ${String(row.throttled).padStart(3)}  mean interval ${mean.toFixed(0).padStart(5)} ms  ${bar}`
          )
        }
      }
    })

    yield* Effect.forkScoped(operator)
    for (let i = 0; i < clients; i++) yield* Effect.forkScoped(client(i))
    yield* reporter

    const span = offAt - onAt - 2
    const clientRates = clientSaves.map((n) => n / span)
    const fairness = Simulation.jainFairness(clientRates)
    if (print) {
      yield* Console.log(
        `fairness (Jain) of the clients' save rates while throttled: ${fairness.toFixed(4)}; rates: ${clientRates.map((r) => r.toFixed(2)).join(" ")}`
      )
    }
    return {
      threshold,
      onAtSecond: onAt,
      offAtSecond: offAt,
      perSecond: perSecond.map((row, s) => ({
        second: s,
        thresholdOn: s >= onAt && s < offAt,
        saves: row.saves,
        throttled: row.throttled,
        meanIntervalMs: row.meanIntervalMs
      })),
      clientRates,
      fairness
    }
  }).pipe(Effect.scoped)

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  const i = process.argv.indexOf("--seconds")
  const seconds = i > 0 ? Number(process.argv[i + 1]) : undefined
  const options = seconds !== undefined && seconds > 0 ? { seconds } : {}
  NodeRuntime.runMain(
    process.argv.includes("--http")
      ? Effect.asVoid(demoHttp(options).pipe(Effect.provide(NodeHttpClient.layerUndici)))
      : demo(options)
  )
}

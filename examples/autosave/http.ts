/**
 * Auto-save back-pressure over real HTTP with @sluice/http.
 *
 *   npm run example:autosave -- --http            (about 9 s of real time)
 *
 * Three server instances (`effect/http` apps on `@effect/platform-node` servers,
 * loopback ports) each serve `POST /save` behind `Middleware.backpressure`: a `ThresholdMonitor` per
 * instance times the successful saves and, while the rate is over its threshold,
 * the response carries `x-sluice-throttle: 1` (and `"throttle": true` in its JSON
 * body). Editors save round-robin across the instances through a
 * `SluiceHttpClient`; each editor's `AimdInterval` follows the flag of the
 * response it got. An operator switches a service-wide rate threshold on after a
 * third of the run and off after two thirds.
 */
import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { ThresholdMonitor } from "@sluice/adaptive"
import { Simulation } from "@sluice/simulation"
import { Middleware, Protocol, SluiceHttpClient } from "@sluice/http"
import { Clock, Console, Context, Duration, Effect, Layer } from "effect"
import type { Scope } from "effect"
import { HttpClient, HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { jittered, makeEditorIntervals } from "./editors.js"

export interface HttpDemoOptions {
  readonly seconds?: number
  readonly editors?: number
  /** Service-wide saves per second allowed while the threshold is on. */
  readonly threshold?: number
  readonly print?: boolean
  /** When the operator switches the threshold on and off (default: after a third and two thirds). */
  readonly onAtSecond?: number
  readonly offAtSecond?: number
}

export interface HttpSecondReport {
  readonly second: number
  readonly thresholdOn: boolean
  readonly saves: number
  readonly throttled: number
  readonly meanIntervalMs: number
}

export interface HttpDemoReport {
  readonly threshold: number
  readonly onAtSecond: number
  readonly offAtSecond: number
  readonly perSecond: ReadonlyArray<HttpSecondReport>
  /** Saves per second of each editor while the threshold was on (after 1 s of settling). */
  readonly editorRates: ReadonlyArray<number>
  readonly fairness: number
  /** Saves each instance served. */
  readonly perInstance: ReadonlyArray<number>
}

const INSTANCES = 3

/** Serves an app on a loopback port the OS picks, for the life of the scope; its URL. */
const serveOn = (app: Middleware.HttpApp<unknown, Scope.Scope>): Effect.Effect<string, never, Scope.Scope> =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      HttpServer.serve(app).pipe(
        Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
      )
    ).pipe(Effect.orDie)
    return HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
  })

export const demoHttp = (
  options: HttpDemoOptions = {}
): Effect.Effect<HttpDemoReport, unknown, HttpClient.HttpClient> =>
  Effect.gen(function* () {
    const seconds = options.seconds ?? 9
    const editors = options.editors ?? 6
    const threshold = options.threshold ?? 24
    const onAt = options.onAtSecond ?? Math.round(seconds / 3)
    const offAt = options.offAtSecond ?? Math.round((seconds * 2) / 3)
    const print = options.print ?? true

    // ---- the three instances ----
    const perInstance = Array.from({ length: INSTANCES }, () => 0)
    const monitors: Array<ThresholdMonitor.Service> = []
    const urls: Array<string> = []
    for (let i = 0; i < INSTANCES; i++) {
      const monitor = yield* ThresholdMonitor.make({
        name: `autosave-http-${i}`,
        instances: INSTANCES,
        window: "1 second",
        tick: "50 millis"
      })
      monitors.push(monitor)
      const router = yield* HttpRouter.toHttpEffect(
        HttpRouter.add(
          "POST",
          "/save",
          Effect.andThen(
            Effect.sleep("5 millis"), // write the document
            Effect.sync(() => {
              perInstance[i]!++
              return HttpServerResponse.jsonUnsafe({ saved: true })
            })
          )
        )
      )
      const app = router.pipe(
        Middleware.backpressure({ operation: "save", monitor, json: true }),
        Middleware.mapErrors,
        Middleware.criticality()
      )
      urls.push(yield* serveOn(app))
    }

    // ---- the editors ----
    const client = yield* SluiceHttpClient.makeDefault({ name: "editors" })
    let next = 0
    const start = yield* Clock.currentTimeMillis
    const perSecond = Array.from({ length: seconds }, () => ({ saves: 0, throttled: 0, meanIntervalMs: 0 }))
    const editorSaves = Array.from({ length: editors }, () => 0)
    const aimds = yield* makeEditorIntervals(editors)
    const editor = (i: number) => {
      const save = Effect.gen(function* () {
        const response = yield* client.post(`${urls[next++ % INSTANCES]}/save`)
        const body = (yield* response.json) as { readonly throttle?: boolean }
        // the header and the JSON attribute say the same thing
        const throttled = Protocol.parseFlag(response.headers["x-sluice-throttle"]) || body.throttle === true
        const s = Math.floor(((yield* Clock.currentTimeMillis) - start) / 1000)
        if (s < seconds) {
          perSecond[s]!.saves++
          if (throttled) perSecond[s]!.throttled++
          if (s >= onAt + 1 && s < offAt) editorSaves[i]!++
        }
        return throttled
      })
      return Effect.andThen(
        Effect.sleep(Duration.millis((125 * i) / editors)),
        save.pipe(
          Effect.orElseSucceed(() => false),
          Effect.repeat(aimds[i]!.scheduleFrom((throttled: boolean) => throttled).pipe(jittered))
        )
      )
    }

    const operator = Effect.gen(function* () {
      yield* Effect.sleep(Duration.seconds(onAt))
      for (const monitor of monitors) yield* monitor.setThresholds({ rate: threshold })
      if (print) yield* Console.log(`-- ${onAt}s: threshold on: ${threshold} saves/s in total`)
      yield* Effect.sleep(Duration.seconds(offAt - onAt))
      for (const monitor of monitors) yield* monitor.setThresholds({})
      if (print) yield* Console.log(`-- ${offAt}s: threshold off`)
    })

    const reporter = Effect.gen(function* () {
      for (let s = 0; s < seconds; s++) {
        yield* Effect.sleep("1 second")
        const row = perSecond[s]!
        row.meanIntervalMs = aimds.reduce((a, x) => a + x.intervalUnsafe(), 0) / aimds.length
        if (print) {
          yield* Console.log(
            `${String(s + 1).padStart(3)}s  ${String(row.saves).padStart(3)} saves/s  throttled ${String(row.throttled).padStart(3)}  mean interval ${row.meanIntervalMs.toFixed(0).padStart(5)} ms  ${"#".repeat(Math.round(row.saves / 2))}`
          )
        }
      }
    })

    yield* Effect.forkScoped(operator)
    for (let i = 0; i < editors; i++) yield* Effect.forkScoped(editor(i))
    yield* reporter

    const span = offAt - onAt - 1
    const editorRates = editorSaves.map((n) => n / span)
    const fairness = Simulation.jainFairness(editorRates)
    if (print) yield* Console.log(`fairness (Jain) while throttled: ${fairness.toFixed(4)}`)
    return {
      threshold,
      onAtSecond: onAt,
      offAtSecond: offAt,
      perSecond: perSecond.map((row, s) => ({ second: s, thresholdOn: s >= onAt && s < offAt, ...row })),
      editorRates,
      fairness,
      perInstance
    }
  }).pipe(Effect.scoped)

/**
 * How long a quota check takes while Redis does not answer:
 * `npx tsx --conditions=@sluice/source bench/quota-faults.ts [--fault pause|stop|blackhole] [--runs 10] [--options '{}'] [--json]`.
 *
 * Each run starts a fresh `Quota` service (the given options, by default the library's) on a
 * private redis-server, warms it with 200 checks, then takes Redis away for 1.2 s while one
 * fiber checks in a loop (a check, then 2 ms of sleep):
 * - `pause`: SIGSTOP the server (it neither reads nor answers; the connection stays open);
 * - `stop`: SIGKILL it (connections are refused; restarted after the run);
 * - `blackhole`: the client talks to Redis through a TCP proxy that, during the fault, stops
 *   reading both ways without closing anything (a network that drops every packet: TCP holds
 *   the bytes and delivers them once it heals).
 * It prints, per run, the slowest check, the event-loop delay measured beside it (the max of
 * `monitorEventLoopDelay`: how late a 1 ms timer fired, the time the process did not run), the
 * 1-minute load average, and which sources decided; then the worst of each over all runs.
 */
import { Quota, QuotaConfig } from "@sluice/quota"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import * as IoRedis from "@sluice/quota/IoRedis"
import { Duration, Effect, Layer } from "effect"
import * as net from "node:net"
import * as os from "node:os"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { freePort, type RedisServer, startRedis, stopAll } from "../packages/quota/test/quota/redisServer.js"

const args = process.argv.slice(2)
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback
}
const fault = arg("fault", "pause") as "pause" | "stop" | "blackhole"
const runs = Number(arg("runs", "10"))
const options = JSON.parse(arg("options", "{}")) as Quota.QuotaOptions
const jsonOnly = args.includes("--json")
const FAULT_MS = 1200

const plan: QuotaConfig.PlanInput = {
  tiers: [
    { name: "spike", algorithm: "gcra", limit: 100_000, period: "1 second", burst: 100_000 },
    { name: "count", algorithm: "sliding-window", limit: 10_000_000, period: "1 hour" }
  ]
}

/** A TCP proxy to `port` that forwards nothing, either way, while `on` is set (see `blackhole`). */
const blackholeProxy = async (port: number) => {
  const sockets = new Set<net.Socket>()
  let on = false
  const state = {
    get on() {
      return on
    },
    set on(value: boolean) {
      on = value
      for (const socket of sockets)
        if (value) socket.pause()
        else socket.resume()
    }
  }
  const server = net.createServer((inbound) => {
    const outbound = net.connect(port, "127.0.0.1")
    for (const socket of [inbound, outbound]) {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
      if (on) socket.pause()
    }
    inbound.on("data", (chunk) => outbound.write(chunk))
    outbound.on("data", (chunk) => inbound.write(chunk))
    inbound.on("error", () => outbound.destroy())
    outbound.on("error", () => inbound.destroy())
    inbound.on("close", () => outbound.destroy())
    outbound.on("close", () => inbound.destroy())
  })
  const proxyPort = await freePort()
  await new Promise<void>((resolve) => server.listen(proxyPort, "127.0.0.1", resolve))
  return { url: `redis://127.0.0.1:${proxyPort}`, state, close: () => server.close() }
}

const oneRun = (server: RedisServer, url: string, hole: { on: boolean }, run: number) =>
  Effect.gen(function* () {
    const quota = yield* Quota.Quota
    for (let i = 0; i < 200; i++) yield* quota.check(`warm-${i % 10}`)
    const loopDelay = monitorEventLoopDelay({ resolution: 1 })
    if (fault === "pause") server.process.kill("SIGSTOP")
    else if (fault === "stop") yield* Effect.promise(() => server.kill())
    else hole.on = true
    loopDelay.enable()
    const from = performance.now()
    let slowest = 0
    const sources: Record<string, number> = {}
    while (performance.now() - from < FAULT_MS) {
      const start = performance.now()
      const decision = yield* quota.check("faulty")
      const took = performance.now() - start
      if (took > slowest) slowest = took
      sources[decision.source] = (sources[decision.source] ?? 0) + 1
      yield* Effect.sleep(Duration.millis(2))
    }
    loopDelay.disable()
    if (fault === "pause") server.process.kill("SIGCONT")
    else if (fault === "stop") yield* Effect.promise(() => server.restart())
    else hole.on = false
    return {
      run,
      fault,
      slowestMs: Math.round(slowest * 100) / 100,
      loopDelayMaxMs: Math.round((loopDelay.max / 1e6) * 100) / 100,
      load1: Math.round(os.loadavg()[0]! * 100) / 100,
      sources,
      url
    }
  }).pipe(
    Effect.provide(
      Quota.layer(options).pipe(
        Layer.provide(IoRedis.layerStoreShared({ prefix: `bench:faults:${process.pid}:${run}:` })),
        Layer.provide(QuotaConfig.layer({ default: plan })),
        Layer.provide(IoRedisClient.layer({ url }))
      )
    )
  )

const main = Effect.gen(function* () {
  const server = yield* Effect.promise(() => startRedis())
  const proxy = fault === "blackhole" ? yield* Effect.promise(() => blackholeProxy(server.port)) : undefined
  const results = []
  for (let run = 1; run <= runs; run++) {
    const result = yield* oneRun(server, proxy?.url ?? server.url, proxy?.state ?? { on: false }, run)
    results.push(result)
    if (!jsonOnly)
      console.log(
        `run ${run} (${fault}): slowest check ${result.slowestMs} ms, event-loop delay max ${result.loopDelayMaxMs} ms, ` +
          `load ${result.load1}, sources ${JSON.stringify(result.sources)}`
      )
    // let the client reconnect (stop) and late replies drain before the next run
    yield* Effect.sleep(Duration.millis(500))
  }
  proxy?.close()
  yield* Effect.promise(() => stopAll())
  const summary = {
    fault,
    options,
    runs,
    slowestMs: results.map((r) => r.slowestMs),
    loopDelayMaxMs: results.map((r) => r.loopDelayMaxMs),
    load1: results.map((r) => r.load1),
    // the hard bound's promise, per run: slowest ≤ deadline + 2 ms + the loop delay beside it
    worstOverLoopDelayMs: Math.max(
      ...results.map((r) => Math.round((r.slowestMs - r.loopDelayMaxMs) * 100) / 100)
    )
  }
  console.log(JSON.stringify(summary))
})

Effect.runPromise(main).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)

/**
 * Where the late fallback decisions after a Redis restart come from: `tsx --conditions=@sluice/source
 * --expose-gc bench/quota-restart-bursts.ts [ioredis|NodeRedis] [hard|learned]`.
 *
 * Steady traffic (2,000 checks/s over 50 clients, plan 200 per hour, `fallbackShare` 0.25) on a
 * private redis-server, killed at 2 s and started again empty 3.3 s later; runs 20 s. Prints,
 * per 50 ms bin after Redis is back, the decisions the fallback made and the store failures by
 * reason (`sluice_quota_store_failures_total`), beside the garbage collections longer than 5 ms
 * and the event-loop delay, so a burst can be put down to its cause.
 */
import { NodeRedis } from "@effect/platform-node"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import { Quota, QuotaConfig } from "@sluice/quota"
import * as IoRedis from "@sluice/quota/IoRedis"
import * as Redis from "@sluice/quota/Redis"
import { Effect, Layer, Metric } from "effect"
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks"
import { startRedis } from "../packages/quota/test/quota/redisServer.js"

const transport = process.argv[2] ?? "ioredis"
const learned = process.argv[3] === "learned"
const CLIENTS = 50
const RATE = 2000
const KILL_AT = 2000
const DOWN_MS = 3300
const RUN_MS = 20_000

const gcs: Array<{ at: number; ms: number; kind: number }> = []
new PerformanceObserver((list) => {
  for (const e of list.getEntries())
    if (e.duration > 5)
      gcs.push({
        at: e.startTime,
        ms: e.duration,
        kind: (e as unknown as { detail: { kind: number } }).detail.kind
      })
}).observe({ entryTypes: ["gc"] })

const main = Effect.gen(function* () {
  const server = yield* Effect.promise(() => startRedis())
  const prefix = `bursts:${Date.now()}:`
  const store =
    transport === "ioredis"
      ? IoRedis.layerStoreShared({ prefix }).pipe(Layer.provide(IoRedisClient.layer({ url: server.url })))
      : Redis.layerStore({ prefix }).pipe(Layer.provide(NodeRedis.layer({ url: server.url })))
  const layer = Quota.layer({
    mode: "fallback",
    fallbackShare: 0.25,
    deadline: "15 millis",
    ...(learned ? { maxDeadline: "1 second" } : {})
  }).pipe(
    Layer.provide(store),
    Layer.provide(
      QuotaConfig.layer({
        default: { tiers: [{ name: "count", algorithm: "sliding-window", limit: 200, period: "1 hour" }] }
      })
    )
  )
  const t0 = performance.now()
  let backAt = Infinity
  const fallbackAt: Array<number> = []
  const reasons: Array<{ at: number; counts: Record<string, number> }> = []
  const loop = monitorEventLoopDelay({ resolution: 1 })
  loop.enable()
  const delays: Array<{ at: number; max: number }> = []
  yield* Effect.gen(function* () {
    const quota = yield* Quota.Quota
    const perFiber = RATE / CLIENTS
    const fibers = Array.from({ length: CLIENTS }, (_, i) =>
      Effect.gen(function* () {
        let next = performance.now()
        while (performance.now() - t0 < RUN_MS) {
          const d = yield* quota.check(`client-${i}`)
          if (d.source === "fallback") fallbackAt.push(performance.now() - t0)
          next += 1000 / perFiber
          const wait = next - performance.now()
          if (wait > 0) yield* Effect.sleep(`${Math.floor(wait)} millis`)
        }
      })
    )
    const sampler = Effect.gen(function* () {
      while (performance.now() - t0 < RUN_MS) {
        yield* Effect.sleep("50 millis")
        const snapshots = yield* Metric.snapshot
        const counts: Record<string, number> = {}
        for (const m of snapshots)
          if (m.id === "sluice_quota_store_failures_total" && m.type === "Counter")
            counts[String(m.attributes?.["reason"])] = Number((m.state as { count: number }).count)
        const at = performance.now() - t0
        reasons.push({ at, counts })
        delays.push({ at, max: loop.max / 1e6 })
        loop.reset()
      }
    })
    const event = Effect.gen(function* () {
      yield* Effect.sleep(`${KILL_AT} millis`)
      yield* Effect.promise(() => server.kill())
      yield* Effect.sleep(`${DOWN_MS} millis`)
      yield* Effect.promise(() => server.restart())
      backAt = performance.now() - t0
    })
    yield* Effect.all([...fibers, sampler, event], { concurrency: "unbounded" })
  }).pipe(Effect.provide(layer), Effect.provideService(Metric.MetricRegistry, new Map()))
  yield* Effect.promise(() => server.kill())
  // bins after recovery
  const bins = new Map<number, number>()
  for (const at of fallbackAt)
    if (at > backAt + 500) bins.set(Math.floor(at / 50), (bins.get(Math.floor(at / 50)) ?? 0) + 1)
  console.log(`${transport} ${learned ? "learned" : "hard"}: Redis back at ${backAt.toFixed(0)} ms`)
  let prev: Record<string, number> = {}
  const reasonIn = new Map<number, Record<string, number>>()
  for (const r of reasons) {
    const diff: Record<string, number> = {}
    for (const [k, v] of Object.entries(r.counts)) if (v - (prev[k] ?? 0) > 0) diff[k] = v - (prev[k] ?? 0)
    prev = r.counts
    reasonIn.set(Math.floor((r.at - 1) / 50), diff)
  }
  for (const [bin, n] of [...bins].sort((a, b) => a[0] - b[0])) {
    if (n < 5) continue
    const from = bin * 50
    const gc = gcs
      .filter((g) => g.at - t0 >= from - 100 && g.at - t0 < from + 100)
      .map((g) => `${g.ms.toFixed(1)}ms(kind ${g.kind})`)
    const delay = delays.find((d) => d.at >= from + 50)?.max ?? 0
    console.log(
      `  +${((from - backAt) / 1000).toFixed(2)} s: ${n} fallback; failures ${JSON.stringify(reasonIn.get(bin) ?? {})}${JSON.stringify(reasonIn.get(bin + 1) ?? {})}; gc ${gc.join(" ") || "-"}; loop delay max ${delay.toFixed(1)} ms`
    )
  }
  const after = fallbackAt.filter((a) => a > backAt + 500).length
  const before = fallbackAt.filter((a) => a > 500 && a < KILL_AT).length
  const afterS = (RUN_MS - backAt - 500) / 1000
  const beforeS = (KILL_AT - 500) / 1000
  const stalls = gcs.filter((g) => g.at - t0 > backAt + 500).length
  console.log(
    `  fallback decisions per second: before the kill ${(before / beforeS).toFixed(1)}, from 0.5 s after Redis is back ${(after / afterS).toFixed(1)}; gc pauses > 5 ms after: ${stalls}`
  )
})

Effect.runPromise(Effect.scoped(main)).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)

/**
 * A child process for the cross-process atomicity test: waits for "go" on stdin,
 * then hammers one client's quota through its own Redis connection and prints
 * how many checks were admitted.
 */
import { Quota, QuotaConfig } from "@sluice/quota"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import * as IoRedis from "@sluice/quota/IoRedis"
import { Effect, Layer, Metric } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import * as readline from "node:readline"

const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const prefix = process.env.QUOTA_PREFIX!
const client = process.env.QUOTA_CLIENT!
const attempts = Number(process.env.QUOTA_ATTEMPTS ?? "200")
const plan = JSON.parse(process.env.QUOTA_PLAN!) as QuotaConfig.PlanInput
// the Quota options (default: a generous deadline, fail-closed; "{}" for the library's defaults)
const options = JSON.parse(
  process.env.QUOTA_OPTIONS ?? JSON.stringify({ mode: "fail-closed", deadline: "10 seconds" })
) as Quota.QuotaOptions
const concurrency = Number(process.env.QUOTA_CONCURRENCY ?? "16")

const layer = Quota.layer(options).pipe(
  Layer.provide(IoRedis.layerStoreShared({ prefix })),
  Layer.provide(QuotaConfig.layer({ default: plan })),
  Layer.provide(IoRedisClient.layer({ url }))
)

const waitForGo = Effect.callback<void>((resume) => {
  const lines = readline.createInterface({ input: process.stdin })
  lines.on("line", (line) => {
    if (line.trim() === "go") {
      lines.close()
      resume(Effect.void)
    }
  })
})

const program = Effect.gen(function* () {
  const quota = yield* Quota.Quota
  // Connect, load the script and warm the JIT on another client key, so that every
  // process starts hammering at the same moment rather than after its cold start.
  yield* Effect.forEach(Array.from({ length: 20 }), () => quota.check(`${client}:warm-up:${process.pid}`))
  process.stdout.write("ready\n")
  yield* waitForGo
  const startedAt = Date.now()
  // how late a 1 ms timer fired while the checks ran: the time the OS did not run this process
  const loopDelay = monitorEventLoopDelay({ resolution: 1 })
  loopDelay.enable()
  // each check's latency (ms), to report p50/p90/p99/max
  const latencies: Array<number> = []
  const timedCheck = Effect.suspend(() => {
    const start = performance.now()
    return Effect.map(quota.check(client), (decision) => {
      latencies.push(performance.now() - start)
      return decision
    })
  })
  const decisions = yield* Effect.forEach(Array.from({ length: attempts }), () => timedCheck, { concurrency })
  const endedAt = Date.now()
  // one timer turn first: the delay of the last stretch is recorded when its sampling timer fires
  yield* Effect.sleep("2 millis")
  loopDelay.disable()
  latencies.sort((a, b) => a - b)
  const latencyMs = [0.5, 0.9, 0.99, 1].map((p) =>
    Math.round(latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!)
  )
  const admitted = decisions.filter((d) => d.allowed).length
  const storeFailures = decisions.filter((d) => d.source !== "store").length
  const storeAdmitted = decisions.filter((d) => d.allowed && d.source === "store").length
  const otherAdmitted = decisions.filter((d) => d.allowed && d.source !== "store").length
  const breakerOpened = (yield* quota.breaker!.state) !== "closed"
  // why checks were decided without the store: sluice_quota_store_failures_total by reason
  const reasons: Record<string, number> = {}
  for (const metric of yield* Metric.snapshot) {
    if (metric.id !== "sluice_quota_store_failures_total" || metric.type !== "Counter") continue
    const reason = String(metric.attributes?.["reason"] ?? "?")
    reasons[reason] = Number(metric.state.count)
  }
  // give late replies time to arrive and their refunds to be sent
  yield* Effect.sleep("1 second")
  process.stdout.write(
    JSON.stringify({
      pid: process.pid,
      admitted,
      storeFailures,
      storeAdmitted,
      otherAdmitted,
      breakerOpened,
      latencyMs,
      loopDelayMaxMs: Math.round(loopDelay.max / 1e6),
      reasons,
      startedAt,
      endedAt
    }) + "\n"
  )
}).pipe(Effect.provide(layer))

Effect.runPromise(program).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)

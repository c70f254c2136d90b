/**
 * Quota benchmark: `npm run bench:quota -- --json [--quick]`.
 *
 * Against the local Redis (REDIS_URL, default redis://127.0.0.1:6379), in one run:
 * - latency (p50, p99) of sequential checks and throughput with 100 checks in
 *   flight from one process, for a one-tier plan (gcra), a two-tier plan (gcra
 *   spike + sliding-window count), rate-limiter-flexible's RateLimiterRedis and
 *   @effect/experimental's RateLimiter with its Redis store (token bucket), all on
 *   the same Redis, limits high enough that nothing is denied;
 * - roundTripsPerCheck from Redis's own INFO commandstats (commands a client sent,
 *   not the ones a script ran), on a private redis-server so nothing else counts;
 * - failOpenMaxMs: the slowest fail-open check while that private server is paused.
 *
 * Prints one JSON object (with --json, nothing else on stdout).
 */
import * as RateLimiter from "@effect/experimental/RateLimiter"
import * as RateLimiterRedis from "@effect/experimental/RateLimiter/Redis"
import { Quota, QuotaConfig } from "@sluice/core"
import * as Redis from "@sluice/core/Redis"
import { Duration, Effect, Layer } from "effect"
import { Redis as IORedis } from "ioredis"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { RateLimiterRedis as FlexibleRedis } from "rate-limiter-flexible"
import { commandCalls, redisCli, startRedis, stopAll } from "../packages/core/test/quota/redisServer.js"

const args = process.argv.slice(2)
const jsonOnly = args.includes("--json")
const quick = args.includes("--quick")
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const SEQUENTIAL = quick ? 300 : 5000
const CONCURRENT = quick ? 1000 : 20000
const IN_FLIGHT = 100
// the machines are noisy: the contenders take turns in many short rounds (the first of a round
// rotating), and each one's figures pool all its rounds, so all sample the same noisy periods
const ROUNDS = quick ? 1 : 10
const SEQ_PER_ROUND = SEQUENTIAL / ROUNDS
const CONC_PER_ROUND = CONCURRENT / ROUNDS
const WARM_UP = quick ? 100 : 200
const DEADLINE_MS = 15
const run = `bench:${process.pid}:${Date.now()}`
const log = (...parts: Array<unknown>) => {
  if (!jsonOnly) console.error(...parts)
}

interface Stats {
  readonly p50Ms: number
  readonly p99Ms: number
  readonly throughputPerSec: number
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!
const round = (n: number, digits = 4) => Number(n.toFixed(digits))
/** the pooled measurements of one contender */
class Samples {
  readonly latencies: Array<number> = []
  concurrentMs = 0
  concurrentChecks = 0
  add(round: { latencies: Array<number>; concurrentMs: number }) {
    for (const l of round.latencies) this.latencies.push(l)
    this.concurrentMs += round.concurrentMs
    this.concurrentChecks += CONC_PER_ROUND
  }
  stats(): Stats {
    const sorted = [...this.latencies].sort((a, b) => a - b)
    return {
      p50Ms: round(percentile(sorted, 0.5)),
      p99Ms: round(percentile(sorted, 0.99)),
      throughputPerSec: Math.round(this.concurrentChecks / (this.concurrentMs / 1000))
    }
  }
}

/** one round: sequential latency, then throughput with IN_FLIGHT checks in flight, inside one fiber */
const measureEffect = <A, E>(check: (i: number) => Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    for (let i = 0; i < WARM_UP; i++) yield* check(i)
    const latencies: Array<number> = []
    for (let i = 0; i < SEQ_PER_ROUND; i++) {
      const start = performance.now()
      yield* check(i)
      latencies.push(performance.now() - start)
    }
    // IN_FLIGHT long-lived fibers pulling from one counter, like the promise harness below
    let next = 0
    const worker: Effect.Effect<void, E> = Effect.suspend(() =>
      next < CONC_PER_ROUND ? Effect.zipRight(check(next++), worker) : Effect.void
    )
    const start = performance.now()
    yield* Effect.all(
      Array.from({ length: IN_FLIGHT }, () => worker),
      { concurrency: "unbounded", discard: true }
    )
    return { latencies, concurrentMs: performance.now() - start }
  })

const measurePromise = async (check: (i: number) => Promise<unknown>) => {
  for (let i = 0; i < WARM_UP; i++) await check(i)
  const latencies: Array<number> = []
  for (let i = 0; i < SEQ_PER_ROUND; i++) {
    const start = performance.now()
    await check(i)
    latencies.push(performance.now() - start)
  }
  let next = 0
  const start = performance.now()
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < CONC_PER_ROUND) await check(next++)
    })
  )
  return { latencies, concurrentMs: performance.now() - start }
}

const oneTier: QuotaConfig.PlanInput = {
  tiers: [{ name: "rate", algorithm: "gcra", limit: 1_000_000_000, period: "1 hour", burst: 1_000_000_000 }]
}
const twoTier: QuotaConfig.PlanInput = {
  tiers: [
    { name: "spike", algorithm: "gcra", limit: 1_000_000_000, period: "1 hour", burst: 1_000_000_000 },
    { name: "count", algorithm: "sliding-window", limit: 1_000_000_000, period: "1 hour" }
  ]
}

const quotaLayer = (
  plan: QuotaConfig.PlanInput,
  url: string,
  prefix: string,
  deadline: Duration.DurationInput = Duration.millis(DEADLINE_MS)
) =>
  Quota.layer({ mode: "fail-open", deadline }).pipe(
    Layer.provide(Redis.layerRedis({ url, prefix })),
    Layer.provide(QuotaConfig.layer({ default: plan }))
  )

const measureQuota = (plan: QuotaConfig.PlanInput, label: string) =>
  Effect.gen(function* () {
    const quota = yield* Quota.Quota
    let notFromStore = 0
    // a handful of clients, as a service would see
    const stats = yield* measureEffect((i) =>
      Effect.map(quota.check(`client-${i % 8}`), (d) => {
        if (d.source !== "store") notFromStore++
        return d
      })
    )
    if (notFromStore > 0) log(`${label}: ${notFromStore} checks were not decided by Redis`)
    return stats
    // like the peers, every measured check is decided by Redis: the deadline is not what is measured here
  }).pipe(Effect.provide(quotaLayer(plan, REDIS_URL, `${run}:${label}:`, "5 seconds")))

const measureFlexible = async () => {
  // auto-pipelining as for the Redis quota store's own client (Redis.defaultRedisOptions), so both
  // send their commands the same way
  const client = new IORedis(REDIS_URL, {
    enableOfflineQueue: false,
    enableAutoPipelining: Redis.defaultRedisOptions.enableAutoPipelining ?? false
  })
  await new Promise<void>((resolve) => client.once("ready", () => resolve()))
  const limiter = new FlexibleRedis({
    storeClient: client,
    keyPrefix: `${run}:rlf`,
    points: 1_000_000_000,
    duration: 3600
  })
  try {
    return await measurePromise((i) => limiter.consume(`client-${i % 8}`, 1))
  } finally {
    client.disconnect()
  }
}

const measureExperimental = Effect.gen(function* () {
  const limiter = yield* RateLimiter.RateLimiter
  return yield* measureEffect((i) =>
    limiter.consume({
      algorithm: "token-bucket",
      onExceeded: "fail",
      window: "1 hour",
      limit: 1_000_000_000,
      key: `client-${i % 8}`
    })
  )
}).pipe(
  Effect.provide(
    RateLimiter.layer.pipe(
      Layer.provide(
        RateLimiterRedis.layerStore({
          ...(() => {
            const u = new URL(REDIS_URL)
            return { host: u.hostname, port: Number(u.port || 6379) }
          })(),
          prefix: `${run}:fx:`
        })
      )
    )
  )
)

/** round trips per check and the fail-open tail, on a private redis-server */
const privateServer = Effect.gen(function* () {
  const server = yield* Effect.promise(() => startRedis())
  const roundTripsPerCheck = yield* Effect.gen(function* () {
    const quota = yield* Quota.Quota
    for (let i = 0; i < 50; i++) yield* quota.check(`client-${i % 8}`)
    yield* Effect.promise(() => redisCli(server.port, "CONFIG", "RESETSTAT"))
    const n = quick ? 200 : 2000
    for (let i = 0; i < n; i++) yield* quota.check(`client-${i % 8}`)
    const calls = yield* Effect.promise(() => commandCalls(server.port))
    // INFO commandstats also counts what scripts run inside Redis; only what clients sent is a round trip
    const inScript = new Set(["time", "hmget", "hset", "pexpire", "config|resetstat"])
    const sent = Object.entries(calls)
      .filter(([name]) => !inScript.has(name))
      .reduce((sum, [, count]) => sum + count, 0)
    return sent / n
  }).pipe(Effect.provide(quotaLayer(twoTier, server.url, `${run}:rt:`)))

  const failOpenMaxMs = yield* Effect.gen(function* () {
    const quota = yield* Quota.Quota
    for (let i = 0; i < 200; i++) yield* quota.check("paused")
    // warm-up, as every other figure here has: one untimed pause runs the failure path (deadline,
    // breaker, fail-open decision) once, so the timed pause does not measure V8 compiling it
    yield* Effect.promise(() => redisCli(server.port, "CLIENT", "PAUSE", "200", "ALL"))
    const warmUntil = performance.now() + 150
    while (performance.now() < warmUntil) {
      yield* quota.check("paused")
      yield* Effect.sleep(Duration.millis(1))
    }
    // back to deciding with Redis (the breaker probes after its open interval, 1 s)
    while ((yield* quota.check("paused")).source !== "store") yield* Effect.sleep(Duration.millis(20))
    yield* Effect.promise(() => redisCli(server.port, "CLIENT", "PAUSE", "1500", "ALL"))
    const loopDelay = monitorEventLoopDelay({ resolution: 1 })
    loopDelay.enable()
    const pausedAt = performance.now()
    let slowest = 0
    let failedOpen = 0
    while (performance.now() - pausedAt < 1200) {
      const start = performance.now()
      const decision = yield* quota.check("paused")
      slowest = Math.max(slowest, performance.now() - start)
      if (decision.source === "fail-open") failedOpen++
      yield* Effect.sleep(Duration.millis(1))
    }
    loopDelay.disable()
    log(
      `paused: ${failedOpen} checks failed open, slowest ${slowest.toFixed(2)} ms; ` +
        `event-loop delay max ${(loopDelay.max / 1e6).toFixed(2)} ms (time the OS did not run this process)`
    )
    return round(slowest, 3)
  }).pipe(Effect.provide(quotaLayer(twoTier, server.url, `${run}:fo:`)))
  yield* Effect.promise(() => stopAll())
  return { roundTripsPerCheck, failOpenMaxMs }
})

const main = Effect.gen(function* () {
  log(
    `quota bench: ${SEQUENTIAL} sequential + ${CONCURRENT} concurrent checks (${IN_FLIGHT} in flight) each, ` +
      `in ${ROUNDS} interleaved rounds`
  )
  const samples = {
    flexible: new Samples(),
    one: new Samples(),
    two: new Samples(),
    experimental: new Samples()
  }
  const contenders: Array<
    [Samples, (round: number) => Effect.Effect<{ latencies: Array<number>; concurrentMs: number }, unknown>]
  > = [
    [samples.flexible, () => Effect.promise(measureFlexible)],
    [samples.one, (round) => measureQuota(oneTier, `oneTier${round}`)],
    [samples.two, (round) => measureQuota(twoTier, `twoTier${round}`)],
    [samples.experimental, () => measureExperimental]
  ]
  // one untimed round each first, so the JIT has compiled every contender's path
  for (let i = 0; i < (quick ? 0 : 2); i++) for (const [, measure] of contenders) yield* measure(-1 - i)
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < contenders.length; k++) {
      const [into, measure] = contenders[(round + k) % contenders.length]!
      into.add(yield* measure(round))
    }
    log(`round ${round}`, {
      flexible: samples.flexible.stats(),
      one: samples.one.stats(),
      two: samples.two.stats(),
      experimental: samples.experimental.stats()
    })
  }
  const one = samples.one.stats()
  const two = samples.two.stats()
  const flexible = samples.flexible.stats()
  const experimental = samples.experimental.stats()
  const { failOpenMaxMs, roundTripsPerCheck } = yield* privateServer
  const result = {
    checks: SEQUENTIAL + CONCURRENT,
    oneTier: one,
    twoTier: two,
    roundTripsPerCheck,
    peers: { "rate-limiter-flexible": flexible, "@effect/experimental": experimental },
    failOpenMaxMs
  }
  console.log(JSON.stringify(result))
})

Effect.runPromise(main).then(
  () => process.exit(0),
  async (error) => {
    console.error(error)
    await stopAll()
    process.exit(1)
  }
)

/**
 * Quota service example: per-client tiered quotas shared by several processes
 * through Redis. `npm run example:quota-service -- [--workers 4] [--seconds 2] [--json]`
 *
 * The parent writes the plans to Redis (a default plan and one override), then
 * starts `--workers` OS processes. Each process reads the plans from Redis, and
 * sends as many requests as it can for a few clients through `Quota.guard`; the
 * parent adds up what every process admitted and compares it with what the plans
 * allow over the run. `--http [--instances 3]` runs the API over real HTTP instead:
 * several `effect/http` servers on Node guarded by @sluice/http's `Middleware.quota`
 * on the same Redis (see http.ts).
 */
import { Quota, QuotaConfig } from "@sluice/quota"
import * as IoRedis from "@sluice/quota/IoRedis"
import * as IoRedisClient from "@sluice/core/IoRedisClient"
import { NodeHttpClient } from "@effect/platform-node"
import { Duration, Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import * as readline from "node:readline"
import { fileURLToPath } from "node:url"
import { runHttp } from "./http.js"

const args = process.argv.slice(2)
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? args[i + 1]! : fallback
}
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const workers = Number(flag("workers", "4"))
const seconds = Number(flag("seconds", "2"))
const json = args.includes("--json")
const run = flag("run", `${process.pid}-${Date.now()}`)
const plansKey = `example:quota:${run}:plans`
const prefix = `example:quota:${run}:`
const clients = ["acme", "globex", "initech"]

/** 20 per second with bursts of 40, and at most 60 per minute */
const defaultPlan: QuotaConfig.PlanInput = {
  tiers: [
    { name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 },
    { name: "count", algorithm: "sliding-window", limit: 60, period: "1 minute" }
  ]
}
/** acme pays for more */
const acmePlan: QuotaConfig.PlanInput = {
  tiers: [
    { name: "spike", algorithm: "gcra", limit: 50, period: "1 second", burst: 100 },
    { name: "count", algorithm: "sliding-window", limit: 150, period: "1 minute" }
  ]
}

/** the most a plan can admit over `ms`, from an empty state */
const bound = (plan: QuotaConfig.PlanInput, ms: number) => {
  const [spike, count] = plan.tiers as ReadonlyArray<{ limit: number; burst?: number }>
  return Math.min(spike!.burst! + Math.floor((spike!.limit * ms) / 1000), count!.limit)
}

// fail-open: if Redis is down the API keeps serving. The deadline (a hard bound on how long a
// check waits for Redis) is raised from the 15 ms default because this example runs several
// processes on what may be a busy machine; what fails open is counted and reported.
// The store and the plan source share the process' one Redis connection.
const quotaLayer = Quota.layer({ mode: "fail-open", deadline: "100 millis" }).pipe(
  Layer.provide(IoRedis.layerStoreShared({ prefix })),
  Layer.provide(IoRedis.layerPlanStoreShared({ key: plansKey, default: defaultPlan, refresh: "1 second" })),
  Layer.provide(IoRedisClient.layer({ url: REDIS_URL }))
)

/** one process: hammer every client until the time is up, through Quota.guard */
const worker = Effect.gen(function* () {
  const admitted: Record<string, number> = {}
  const denied: Record<string, number> = {}
  const failedOpen: Record<string, number> = {}
  const bump = (counts: Record<string, number>, client: string) => {
    counts[client] = (counts[client] ?? 0) + 1
  }
  // what a request handler does: run the work only within quota, else fail with QuotaExceeded
  const handle = (client: string) =>
    Quota.check(client).pipe(
      Effect.tap((decision) =>
        Effect.sync(() => {
          if (decision.source === "fail-open") bump(failedOpen, client)
        })
      ),
      Effect.flatMap((decision) =>
        decision.allowed ? Effect.succeed("ok") : Effect.fail(Quota.toQuotaExceeded(decision))
      ),
      Effect.match({ onFailure: () => bump(denied, client), onSuccess: () => bump(admitted, client) })
    )
  yield* Quota.Quota
  process.stdout.write("ready\n")
  yield* Effect.callback<void>((resume) => {
    const lines = readline.createInterface({ input: process.stdin })
    lines.once("line", () => {
      lines.close()
      resume(Effect.void)
    })
  })
  const until = performance.now() + seconds * 1000
  while (performance.now() < until) {
    for (const client of clients) yield* handle(client)
    yield* Effect.sleep(Duration.millis(1))
  }
  process.stdout.write(JSON.stringify({ pid: process.pid, admitted, denied, failedOpen }) + "\n")
}).pipe(Effect.provide(quotaLayer))

interface WorkerResult {
  readonly pid: number
  readonly admitted: Record<string, number>
  readonly denied: Record<string, number>
  readonly failedOpen: Record<string, number>
}

const startWorker = () => {
  const child = spawn(
    process.execPath,
    [
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      "--worker",
      "--run",
      run,
      "--seconds",
      String(seconds)
    ],
    { env: { ...process.env, REDIS_URL }, stdio: ["pipe", "pipe", "inherit"] }
  )
  const lines = readline.createInterface({ input: child.stdout! })
  const ready = new Promise<void>((resolve, reject) => {
    lines.on("line", (line) => line === "ready" && resolve())
    child.once("exit", (code) => reject(new Error(`worker exited with ${code}`)))
  })
  const result = new Promise<WorkerResult>((resolve, reject) => {
    lines.on("line", (line) => line.startsWith("{") && resolve(JSON.parse(line)))
    child.once("exit", (code) => code !== 0 && reject(new Error(`worker exited with ${code}`)))
  })
  return { child, ready, result }
}

const parent = Effect.gen(function* () {
  // plans live in Redis: every process sees the same ones
  const config = yield* IoRedis.makeConfig({ url: REDIS_URL, key: plansKey, default: defaultPlan })
  yield* config.setPlan("acme", acmePlan)
  const children = Array.from({ length: workers }, startWorker)
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      for (const { child } of children) if (child.exitCode === null) child.kill("SIGKILL")
    })
  )
  yield* Effect.promise(() => Promise.all(children.map((c) => c.ready)))
  const startedAt = performance.now()
  for (const { child } of children) child.stdin!.write("go\n")
  const results = yield* Effect.promise(() => Promise.all(children.map((c) => c.result)))
  const elapsedMs = performance.now() - startedAt
  const report = clients.map((client) => {
    const plan = client === "acme" ? acmePlan : defaultPlan
    return {
      client,
      admitted: results.reduce((sum, r) => sum + (r.admitted[client] ?? 0), 0),
      denied: results.reduce((sum, r) => sum + (r.denied[client] ?? 0), 0),
      perProcess: results.map((r) => r.admitted[client] ?? 0),
      // checks that found Redis too slow (or down) and were let through
      failedOpen: results.reduce((sum, r) => sum + (r.failedOpen[client] ?? 0), 0),
      allowedAtMost: bound(plan, elapsedMs)
    }
  })
  yield* Effect.promise(async () => {
    const { Redis: IORedis } = await import("ioredis")
    const admin = new IORedis(REDIS_URL)
    const keys = await admin.keys(`example:quota:${run}:*`)
    if (keys.length > 0) await admin.del(...keys)
    await admin.quit()
  })
  if (json)
    console.log(JSON.stringify({ workers, seconds, elapsedMs: Math.round(elapsedMs), clients: report }))
  else {
    console.log(`${workers} processes, ${(elapsedMs / 1000).toFixed(1)} s, quotas shared through Redis:`)
    for (const r of report) {
      console.log(
        `  ${r.client.padEnd(8)} admitted ${String(r.admitted).padStart(4)} (per process ${r.perProcess.join(", ")}), ` +
          `denied ${r.denied}, plan allows at most ${r.allowedAtMost}` +
          (r.failedOpen > 0 ? `, of which ${r.failedOpen} failed open` : "")
      )
    }
  }
}).pipe(Effect.scoped)

/** `--http`: the API over real HTTP (see http.ts) */
const overHttp = Effect.gen(function* () {
  const report = yield* runHttp({
    redisUrl: REDIS_URL,
    instances: Number(flag("instances", "3")),
    seconds,
    run
  }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  if (json) console.log(JSON.stringify(report))
  else {
    console.log(
      `${report.instances} HTTP instances, ${(report.elapsedMs / 1000).toFixed(1)} s, quotas shared through Redis:`
    )
    for (const r of report.clients) {
      console.log(
        `  ${r.client.padEnd(8)} 200 × ${String(r.admitted).padStart(4)} (per instance ${r.perInstance.join(", ")}), ` +
          `429 × ${r.denied} (Retry-After up to ${r.maxRetryAfter} s), plan allows at most ${r.allowedAtMost}; ` +
          `RateLimit-Policy: ${r.policy}`
      )
    }
  }
})

Effect.runPromise(args.includes("--worker") ? worker : args.includes("--http") ? overHttp : parent).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)

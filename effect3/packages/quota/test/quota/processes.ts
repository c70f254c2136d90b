/**
 * Several OS processes hammering one client's quota through Redis (each its own `Quota` service
 * and connection, `worker.ts`), optionally beside busy loops: for `RedisProcesses.test.ts` and
 * `bench/quota-processes.ts`.
 */
import type { Quota } from "@sluice/quota"
import { type ChildProcess, spawn } from "node:child_process"
import * as os from "node:os"
import * as path from "node:path"
import * as readline from "node:readline"
import { fileURLToPath } from "node:url"
import { decodeState, tierId } from "@sluice/kernel/quota/RedisScript"

export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const worker = path.join(path.dirname(fileURLToPath(import.meta.url)), "worker.ts")

export interface WorkerResult {
  readonly pid: number
  readonly admitted: number
  readonly storeFailures: number
  readonly storeAdmitted: number
  readonly otherAdmitted: number
  readonly breakerOpened: boolean
  /** p50, p90, p99 and max latency of the process's checks (ms) */
  readonly latencyMs: ReadonlyArray<number>
  /** the longest the process's event loop was held up while it checked (ms) */
  readonly loopDelayMaxMs: number
  readonly reasons: Record<string, number>
  readonly startedAt: number
  readonly endedAt: number
}

export const spawnWorker = (env: Record<string, string>) => {
  const child = spawn(process.execPath, ["--import", "tsx", "--conditions=@sluice/source", worker], {
    env: { ...process.env, REDIS_URL, ...env },
    stdio: ["pipe", "pipe", "inherit"]
  })
  const lines = readline.createInterface({ input: child.stdout! })
  const ready = new Promise<void>((resolve, reject) => {
    lines.on("line", (line) => line === "ready" && resolve())
    child.once("exit", (code) => reject(new Error(`worker exited early with ${code}`)))
  })
  const result = new Promise<WorkerResult>((resolve, reject) => {
    lines.on("line", (line) => line.startsWith("{") && resolve(JSON.parse(line)))
    child.once("exit", (code) => code !== 0 && reject(new Error(`worker exited with ${code}`)))
  })
  return { child, ready, result }
}

/** the current window's count of a client's sliding-window tier, as Redis holds it */
export const redisCount = async (key: string, tier: string): Promise<number> => {
  const { Redis } = await import("ioredis")
  const redis = new Redis(REDIS_URL)
  try {
    const value = await redis.getBuffer(key)
    return value === null
      ? 0
      : (decodeState(value).tiers.get(tierId({ name: tier, algorithm: "sliding-window" }))?.[1] ?? 0)
  } finally {
    await redis.quit()
  }
}

/** The plan of the saturation run: 1,000 per hour on both tiers, so nothing refills meanwhile. */
export const LIMIT = 1000

export interface SaturationResult {
  readonly options: Quota.QuotaOptions
  readonly processes: number
  readonly attempts: number
  readonly admitted: number
  readonly storeAdmitted: number
  /** admitted by the failure mode (the fallback, or fail-open) */
  readonly otherAdmitted: number
  /** checks decided without the store */
  readonly failures: number
  /** what Redis counted in the sliding window: the units it admitted and kept */
  readonly counted: number
  readonly breakerOpened: number
  readonly reasons: ReadonlyArray<Record<string, number>>
  readonly latencyMs: ReadonlyArray<ReadonlyArray<number>>
  readonly loopDelayMaxMs: ReadonlyArray<number>
  /** the 1-minute load average when the run began and when it ended */
  readonly load1: readonly [number, number]
}

/**
 * `processes` processes × one key (300 checks each, 32 in flight, against a limit of 1,000),
 * each with the given Quota options, beside `busyLoops` busy loops (on this project's 2-core
 * machines, two saturate the host).
 */
export const saturation = async (
  options: Quota.QuotaOptions,
  { busyLoops = 2, processes = 8 }: { readonly processes?: number; readonly busyLoops?: number } = {}
): Promise<SaturationResult> => {
  const children: Array<ChildProcess> = []
  const load = () => Math.round(os.loadavg()[0]! * 100) / 100
  const loadBefore = load()
  try {
    const prefix = `test:procs8:${process.pid}:${Date.now()}:`
    const plan = {
      tiers: [
        { name: "spike", algorithm: "gcra", limit: LIMIT, period: "1 hour", burst: LIMIT },
        { name: "count", algorithm: "sliding-window", limit: LIMIT, period: "1 hour" }
      ]
    }
    const workers = Array.from({ length: processes }, () =>
      spawnWorker({
        QUOTA_PREFIX: prefix,
        QUOTA_CLIENT: "shared",
        QUOTA_ATTEMPTS: "300",
        QUOTA_CONCURRENCY: "32",
        QUOTA_PLAN: JSON.stringify(plan),
        QUOTA_OPTIONS: JSON.stringify(options)
      })
    )
    children.push(...workers.map((w) => w.child))
    await Promise.all(workers.map((w) => w.ready))
    for (let i = 0; i < busyLoops; i++) {
      const burner = spawn(
        process.execPath,
        ["-e", "const end = Date.now() + 20000; while (Date.now() < end) {}"],
        { stdio: "ignore" }
      )
      children.push(burner)
    }
    for (const w of workers) w.child.stdin!.write("go\n")
    const results = await Promise.all(workers.map((w) => w.result))
    const sum = (f: (r: WorkerResult) => number) => results.reduce((total, r) => total + f(r), 0)
    return {
      options,
      processes,
      attempts: processes * 300,
      admitted: sum((r) => r.admitted),
      storeAdmitted: sum((r) => r.storeAdmitted),
      otherAdmitted: sum((r) => r.otherAdmitted),
      failures: sum((r) => r.storeFailures),
      counted: await redisCount(`${prefix}{shared}`, "count"),
      breakerOpened: results.filter((r) => r.breakerOpened).length,
      reasons: results.map((r) => r.reasons),
      latencyMs: results.map((r) => r.latencyMs),
      loopDelayMaxMs: results.map((r) => r.loopDelayMaxMs),
      load1: [loadBefore, load()]
    }
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
  }
}

export const describeSaturation = (r: SaturationResult): string =>
  `${r.processes} processes, options ${JSON.stringify(r.options)}: admitted ${r.admitted} of ${r.attempts} ` +
  `(store ${r.storeAdmitted}, failure mode ${r.otherAdmitted}), decided without the store ${r.failures}, ` +
  `Redis counted ${r.counted}, breaker opened in ${r.breakerOpened}, load ${r.load1[0]} → ${r.load1[1]}, ` +
  `reasons ${JSON.stringify(r.reasons)}, latency p50/p90/p99/max ms ${JSON.stringify(r.latencyMs)}, ` +
  `event-loop delay max ms ${JSON.stringify(r.loopDelayMaxMs)}`

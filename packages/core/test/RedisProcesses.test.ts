import { describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"
import * as readline from "node:readline"
import { fileURLToPath } from "node:url"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const worker = path.join(path.dirname(fileURLToPath(import.meta.url)), "quota", "worker.ts")

interface Result {
  readonly pid: number
  readonly admitted: number
  readonly storeFailures: number
  readonly startedAt: number
  readonly endedAt: number
}

const spawnWorker = (env: Record<string, string>) => {
  const child = spawn(process.execPath, ["--import", "tsx", "--conditions=@sluice/source", worker], {
    env: { ...process.env, REDIS_URL, ...env },
    stdio: ["pipe", "pipe", "inherit"]
  })
  const lines = readline.createInterface({ input: child.stdout! })
  const ready = new Promise<void>((resolve, reject) => {
    lines.on("line", (line) => line === "ready" && resolve())
    child.once("exit", (code) => reject(new Error(`worker exited early with ${code}`)))
  })
  const result = new Promise<Result>((resolve, reject) => {
    lines.on("line", (line) => line.startsWith("{") && resolve(JSON.parse(line)))
    child.once("exit", (code) => code !== 0 && reject(new Error(`worker exited with ${code}`)))
  })
  return { child, ready, result }
}

describe("Redis quota across OS processes", () => {
  it("4 processes hammer one client's quota at once: exactly the limit is admitted", async () => {
    const children: Array<ChildProcess> = []
    try {
      const prefix = `test:procs:${process.pid}:${Date.now()}:`
      const plan = {
        tiers: [
          { name: "spike", algorithm: "gcra", limit: 1000, period: "1 hour", burst: 300 },
          { name: "count", algorithm: "sliding-window", limit: 250, period: "1 hour" }
        ]
      }
      const workers = Array.from({ length: 4 }, () =>
        spawnWorker({
          QUOTA_PREFIX: prefix,
          QUOTA_CLIENT: "shared",
          QUOTA_ATTEMPTS: "150",
          QUOTA_PLAN: JSON.stringify(plan)
        })
      )
      children.push(...workers.map((w) => w.child))
      await Promise.all(workers.map((w) => w.ready))
      for (const w of workers) w.child.stdin!.write("go\n")
      const results = await Promise.all(workers.map((w) => w.result))
      expect(new Set(results.map((r) => r.pid)).size).toBe(4)
      expect(results.every((r) => r.storeFailures === 0)).toBe(true)
      // 600 attempts against a limit of 250 (the tighter of 300 and 250)
      expect(results.reduce((sum, r) => sum + r.admitted, 0)).toBe(250)
      // they really ran at the same time: every process was still checking when the last one began
      const lastStart = Math.max(...results.map((r) => r.startedAt))
      expect(results.every((r) => r.endedAt >= lastStart)).toBe(true)
    } finally {
      for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
    }
  }, 90_000)
})

/**
 * Starts private `redis-server` processes for tests that must pause, kill or
 * cluster Redis. Every process is tracked and killed by `stopAll` (and on exit).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

const running = new Set<ChildProcess>()
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL")
})

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

export const redisCli = (port: number, ...args: Array<string>): Promise<string> =>
  new Promise((resolve, reject) => {
    execFile(
      "redis-cli",
      ["-h", "127.0.0.1", "-p", String(port), ...args],
      { timeout: 20_000 },
      (error, stdout) => (error ? reject(error) : resolve(stdout))
    )
  })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export interface RedisServer {
  readonly port: number
  readonly url: string
  readonly dir: string
  process: ChildProcess
  /** SIGKILL and wait for the exit */
  kill(): Promise<void>
  /** start again on the same port */
  restart(): Promise<void>
}

export const tmpDir = (): string => fs.mkdtempSync(path.join(os.tmpdir(), "sluice-redis-"))

export const startRedis = async (
  options: { port?: number; dir?: string; args?: ReadonlyArray<string> } = {}
): Promise<RedisServer> => {
  const port = options.port ?? (await freePort())
  const dir = options.dir ?? tmpDir()
  const launch = async () => {
    const child = spawn(
      "redis-server",
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--dir",
        dir,
        ...(options.args ?? [])
      ],
      { stdio: "ignore" }
    )
    running.add(child)
    child.on("exit", () => running.delete(child))
    for (let i = 0; i < 200; i++) {
      try {
        if ((await redisCli(port, "PING")).trim() === "PONG") return child
      } catch {
        // not up yet
      }
      if (child.exitCode !== null) throw new Error(`redis-server on ${port} exited with ${child.exitCode}`)
      await sleep(25)
    }
    child.kill("SIGKILL")
    throw new Error(`redis-server on ${port} did not start`)
  }
  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    process: await launch(),
    kill: async () => {
      const child = server.process
      if (child.exitCode !== null || child.signalCode !== null) return
      await new Promise<void>((resolve) => {
        child.once("exit", () => resolve())
        child.kill("SIGKILL")
      })
    },
    restart: async () => {
      server.process = await launch()
    }
  }
  return server
}

export const stopAll = async (): Promise<void> => {
  await Promise.all(
    Array.from(running, (child) =>
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            child.once("exit", () => resolve())
            child.kill("SIGKILL")
          })
    )
  )
}

/**
 * What `INFO commandstats` counts but no client sent over the network: the commands the quota
 * scripts run inside Redis, and the test's own admin commands.
 */
const notRoundTrips = /^(time|get|set|info|config\|resetstat)$/

/** The commands clients sent (round trips), from `commandCalls`. */
export const roundTrips = (calls: Record<string, number>): number =>
  Object.entries(calls)
    .filter(([name]) => !notRoundTrips.test(name))
    .reduce((sum, [, n]) => sum + n, 0)

/** INFO commandstats as `{ command: calls }` */
export const commandCalls = async (port: number): Promise<Record<string, number>> => {
  const info = await redisCli(port, "INFO", "commandstats")
  const calls: Record<string, number> = {}
  for (const line of info.split(/\r?\n/)) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line)
    if (match) calls[match[1]!] = Number(match[2])
  }
  return calls
}

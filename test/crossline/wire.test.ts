/**
 * Across lines on the wire: Sluice's 3.x line (effect3/, Effect 3) and main line (Effect 4) speak
 * one protocol. Each line has a peer program (`effect3/test/crossline/peer.ts`, `./peer.ts`) that
 * serves the same routes behind Sluice's middleware and calls them with a `SluiceHttpClient`;
 * each runs as a child process from its own npm root, so each resolves its own `effect`.
 *
 * Every pairing (3→3, 3→4, 4→3, 4→4; client→server) must decode the same values: the
 * criticality and attempt number the server saw, a retried call's attempts, the throttle flag
 * the client published, and each of Sluice's five errors as the client's typed error (compared
 * through Sluice's own error-body encoding), with the number of requests the server saw for it.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const tsx = join(root, "node_modules", ".bin", "tsx")
const lines = {
  "3": { cwd: join(root, "effect3"), peer: "test/crossline/peer.ts" },
  "4": { cwd: root, peer: "test/crossline/peer.ts" }
} as const
type Line = keyof typeof lines

const servers = new Map<Line, { readonly child: ChildProcess; readonly base: string }>()

const startServer = (line: Line) =>
  new Promise<{ child: ChildProcess; base: string }>((resolve, reject) => {
    const child = spawn(tsx, ["--conditions=@sluice/source", lines[line].peer, "server"], {
      cwd: lines[line].cwd,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    child.stderr.on("data", (d) => (err += d))
    child.stdout.on("data", (d) => {
      out += d
      const port = /\{"port":(\d+)\}/.exec(out)?.[1]
      if (port !== undefined) resolve({ child, base: `http://127.0.0.1:${port}` })
    })
    child.on("exit", (code) => reject(new Error(`the ${line}.x server exited (${code}): ${out}${err}`)))
  })

const runClient = (line: Line, base: string) =>
  new Promise<unknown>((resolve, reject) =>
    execFile(
      tsx,
      ["--conditions=@sluice/source", lines[line].peer, "client", base],
      { cwd: lines[line].cwd, timeout: 90_000, maxBuffer: 16 << 20 },
      (error, stdout, stderr) => {
        if (error !== null)
          return reject(new Error(`the ${line}.x client failed: ${error}\n${stdout}${stderr}`))
        try {
          resolve(JSON.parse(stdout.trim().split("\n").at(-1)!))
        } catch {
          reject(new Error(`the ${line}.x client printed no report: ${stdout}${stderr}`))
        }
      }
    )
  )

// What every pairing must decode (the 3.x line's own reading of its own server, by construction
// the behaviour existing applications rely on).
const expected = {
  echo: { ok: { criticality: "SHEDDABLE_PLUS", attempt: 0 } },
  flaky: { ok: { arrivals: 3, attempt: 2 } },
  throttle: { ok: { text: "ok", signal: true } },
  errors: {
    overloaded: {
      error: {
        error: {
          _tag: "DontRetry",
          reason: "attempts",
          attempts: 3,
          cause: { _tag: "Overloaded", reason: "orders shard eu-7 busy", retryAfterMs: 2000 }
        }
      }
    },
    quota: {
      error: {
        error: {
          _tag: "DontRetry",
          reason: "not-retryable",
          attempts: 1,
          cause: { _tag: "QuotaExceeded", tier: "per-key", limit: 5, remaining: 0, retryAfterMs: 3000 }
        }
      }
    },
    throttled: {
      error: {
        error: {
          _tag: "DontRetry",
          reason: "server",
          cause: { _tag: "Overloaded", reason: "throttled: downstream" }
        }
      }
    },
    "circuit-open": {
      error: {
        error: {
          _tag: "DontRetry",
          reason: "server",
          cause: { _tag: "Overloaded", reason: "circuit open: payments" }
        }
      }
    },
    "dont-retry": {
      error: {
        error: {
          _tag: "DontRetry",
          reason: "budget",
          attempts: 2,
          cause: { _tag: "Overloaded", reason: "inner", retryAfterMs: 1000 }
        }
      }
    }
  },
  arrivals: { overloaded: 3, quota: 1, throttled: 1, "circuit-open": 1, "dont-retry": 1 }
}

describe("across lines on the wire", () => {
  beforeAll(async () => {
    for (const line of ["3", "4"] as const) servers.set(line, await startServer(line))
  }, 120_000)
  afterAll(() => {
    for (const { child } of servers.values()) child.kill()
  })

  it("both servers answer every error with the same status, headers and body", async () => {
    const routes = [
      "/error/overloaded",
      "/error/quota",
      "/error/throttled",
      "/error/circuit-open",
      "/error/dont-retry"
    ]
    const answers = async (line: Line) => {
      const out: Record<string, unknown> = {}
      for (const route of routes) {
        const response = await fetch(`${servers.get(line)!.base}${route}`)
        const headers = Object.fromEntries(
          [...response.headers].filter(
            ([name]) => name !== "date" && name !== "keep-alive" && name !== "connection"
          )
        )
        out[route] = { status: response.status, headers, body: await response.text() }
      }
      return out
    }
    const [three, four] = [await answers("3"), await answers("4")]
    expect(four).toEqual(three)
    // the 429 carries the quota's RateLimit headers and Retry-After on both lines
    expect(four["/error/quota"]).toMatchObject({
      status: 429,
      headers: { "retry-after": "3", "ratelimit-policy": `"per-key";q=5`, ratelimit: `"per-key";r=0;t=3` }
    })
  })

  it("deadlines: a 3.x server ignores x-sluice-deadline-ms, a 4.x server refuses a caller that gave up", async () => {
    const spent = { headers: { "x-sluice-deadline-ms": "0" } }
    const three = await fetch(`${servers.get("3")!.base}/echo`, spent)
    expect(three.status).toBe(200)
    await three.text()
    const four = await fetch(`${servers.get("4")!.base}/echo`, spent)
    expect(four.status).toBe(503)
    expect(four.headers.get("x-sluice-dont-retry")).toBe("1")
    await four.text()
  })

  // The 4.x client calls under a 10 s timeout, so each of its attempts carries x-sluice-deadline-ms:
  // the 4→3 pairing is a 1.x client with deadlines on against a 3.x server, which ignores them.
  for (const [client, server] of [
    ["3", "4"],
    ["4", "3"],
    ["3", "3"],
    ["4", "4"]
  ] as const) {
    it(`a ${client}.x client and a ${server}.x server decode the same values`, async () => {
      // the client resets the server's counts first: the pairings run one after the other
      const report = await runClient(client, servers.get(server)!.base)
      expect(report).toEqual(expected)
    }, 120_000)
  }
})

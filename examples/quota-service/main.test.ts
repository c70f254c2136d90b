import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const main = path.join(path.dirname(fileURLToPath(import.meta.url)), "main.ts")

describe("examples/quota-service", () => {
  it("several processes share each client's quota through Redis", async () => {
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        [
          "--import",
          "tsx",
          "--conditions=@sluice/source",
          main,
          "--workers",
          "3",
          "--seconds",
          "1",
          "--json"
        ],
        { timeout: 90_000 },
        (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out))
      )
    )
    const report = JSON.parse(stdout.trim().split("\n").pop()!)
    expect(report.workers).toBe(3)
    expect(report.clients.map((c: any) => c.client)).toEqual(["acme", "globex", "initech"])
    for (const client of report.clients) {
      expect(client.perProcess).toHaveLength(3)
      expect(client.admitted).toBeGreaterThan(0)
      // whatever failed open (Redis too slow) is the only way past the plan
      expect(client.admitted).toBeLessThanOrEqual(client.allowedAtMost + client.failedOpen)
    }
    // the default plan (at most 60 in a run) is exhausted by three processes
    expect(report.clients.some((c: any) => c.denied > 0)).toBe(true)
    // the override applies: acme may do more than the default plan
    expect(report.clients[0].allowedAtMost).toBeGreaterThan(report.clients[1].allowedAtMost)
  }, 120_000)
})

import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const script = fileURLToPath(new URL("../../scripts/api-report.mjs", import.meta.url))

const run = (args: ReadonlyArray<string>) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [script, ...args], { maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
    )
  })

describe("the public API report", () => {
  it("api/ holds the surface the sources declare (regenerate with node scripts/api-report.mjs --write)", async () => {
    const { code, stdout, stderr } = await run([])
    expect(stderr).toBe("")
    expect(code).toBe(0)
    const counts = JSON.parse(stdout.trim().split("\n").at(-1)!) as { total: number }
    expect(counts.total).toBeGreaterThan(0)
  }, 120_000)
})

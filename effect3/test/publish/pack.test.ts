// The published packages as a new user gets them: `npm pack`, installed into a fresh app outside
// the repository, a library built on them with `declaration: true`, and a consumer typechecked
// without skipLibCheck under NodeNext and Bundler resolution (see scripts/pack-check.mjs).
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const script = fileURLToPath(new URL("../../scripts/pack-check.mjs", import.meta.url))

describe("published packages", () => {
  it("pack, install offline, emit a library's .d.ts without internal/, typecheck a consumer", async () => {
    const result = await new Promise<{ code: number; output: string }>((resolve) =>
      execFile(process.execPath, [script], { maxBuffer: 64 << 20 }, (error, stdout, stderr) =>
        resolve({
          code: error === null ? 0 : typeof error.code === "number" ? error.code : 1,
          output: stdout + stderr
        })
      )
    )
    expect(result.output, result.output).toContain("] ok")
    expect(result.code, result.output).toBe(0)
  }, 300_000)
})

// The 3.x line's packages as a new user of Effect 3 gets them: `npm pack`, installed into a fresh
// app with `effect@3.22` and the 3.x platform packages, a library built on them with
// `declaration: true`, a consumer typechecked without skipLibCheck, and the README's program
// compiled and run (see scripts/pack-check.mjs at the repository's root).
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const script = fileURLToPath(new URL("../../../scripts/pack-check.mjs", import.meta.url))
const line = fileURLToPath(new URL("../..", import.meta.url))

describe("published packages (3.x line)", () => {
  it("pack, npm install with effect@3.22, emit a library's .d.ts without internal/, typecheck a consumer, run the README", async () => {
    const result = await new Promise<{ code: number; output: string }>((resolve) =>
      execFile(process.execPath, [script, line], { maxBuffer: 64 << 20 }, (error, stdout, stderr) =>
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

// The main line's packages as a new user gets them: `npm pack`, installed into a fresh app with
// `npm i effect @effect/platform-node` (no version: the registry's latest), a library built on
// them with `declaration: true`, a consumer typechecked without skipLibCheck, and the README's
// program compiled and run (see scripts/pack-check.mjs).
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const script = fileURLToPath(new URL("../../scripts/pack-check.mjs", import.meta.url))

describe("published packages", () => {
  it("pack, npm install with the latest effect, emit a library's .d.ts without internal/, typecheck a consumer, run the README", async () => {
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

// Every ```ts snippet of the READMEs and every @example of the public modules typechecks and
// either prints (and runs in examples.test.ts) or is marked compile-only or skip (see
// scripts/check-snippets.mjs), and every export carries @since and @category
// (scripts/doc-tags.mjs).
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const run = (script: string) =>
  new Promise<{ code: number; output: string }>((resolve) =>
    execFile(
      process.execPath,
      [fileURLToPath(new URL(`../../scripts/${script}`, import.meta.url))],
      { maxBuffer: 64 << 20 },
      (error, stdout, stderr) =>
        resolve({
          code: error === null ? 0 : typeof error.code === "number" ? error.code : 1,
          output: stdout + stderr
        })
    )
  )

describe("docs", () => {
  it("README snippets and @example blocks typecheck", async () => {
    const result = await run("check-snippets.mjs")
    expect(result.code, result.output).toBe(0)
    expect(result.output).toMatch(/\d+ snippets typechecked/)
  }, 180_000)

  it("every export of a public module has @since and @category", async () => {
    const result = await run("doc-tags.mjs")
    expect(result.code, result.output).toBe(0)
  }, 60_000)
})

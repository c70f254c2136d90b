import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, "..", "..")
const program = join(here, "main.ts")

describe("the README's program", () => {
  it("is the README's code block, verbatim", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8")
    const block = /```ts\n([\s\S]*?)```/.exec(readme)
    expect(block?.[1]).toBe(readFileSync(program, "utf8"))
  })

  it("runs: every call succeeds, the busy answers retried within the budget", async () => {
    const { stdout } = await promisify(execFile)("npx", ["tsx", "--conditions=@sluice/source", program], {
      cwd: root,
      timeout: 60_000
    })
    expect(stdout.trim()).toBe("10 of 10 calls succeeded; the server answered 15 requests, 5 of them 503")
  }, 90_000)
})

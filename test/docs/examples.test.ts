// The examples of the docs that print run, and print what their `// prints:` comments say (the
// convention is in scripts/check-snippets.mjs, which extracts them). They run in this one process,
// one after the other, each imported as a module of its own with its console output captured, so
// the ~100 of them cost one process start, not one each.
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { fileURLToPath, pathToFileURL } from "node:url"
import { format } from "node:util"
import { afterEach, beforeAll, describe, expect, it } from "vitest"

interface Entry {
  readonly file: string
  readonly where: string
  readonly prints: ReadonlyArray<string>
}

const dir = ".snippets-run"
const root = fileURLToPath(new URL("../../", import.meta.url))
execFileSync(process.execPath, ["scripts/check-snippets.mjs", "--emit-run", dir], { cwd: root })
const manifest: ReadonlyArray<Entry> = JSON.parse(readFileSync(`${root}${dir}/manifest.json`, "utf8"))

interface Fiberish {
  readonly addObserver: (cb: (exit: unknown) => void) => () => void
}
const isFiber = (u: unknown): u is Fiberish =>
  typeof u === "object" && u !== null && typeof (u as Partial<Fiberish>).addObserver === "function"

// `…` in an expected line stands for any text
const matches = (expected: string, actual: string) =>
  new RegExp(
    `^${expected
      .split("…")
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`
  ).test(actual)

const original = { log: console.log, info: console.info }
afterEach(() => {
  console.log = original.log
  console.info = original.info
  delete (globalThis as { __snippetTrack?: unknown }).__snippetTrack
})

describe("examples of the docs run", () => {
  // the first import of a package transforms its sources: done once here, so that no snippet's
  // timeout pays for it
  beforeAll(async () => {
    await Promise.all([
      import("effect"),
      import("@effect/platform-node"),
      import("@sluice/core"),
      import("@sluice/adaptive"),
      import("@sluice/retry"),
      import("@sluice/quota"),
      import("@sluice/http"),
      import("@sluice/simulation")
    ])
  }, 120_000)

  it("some do", () => {
    expect(manifest.length).toBeGreaterThan(0)
  })

  for (const entry of manifest) {
    it(
      entry.where,
      async () => {
        const printed: Array<string> = []
        const capture = (...args: Array<unknown>) => {
          printed.push(...format(...args).split("\n"))
        }
        console.log = capture
        console.info = capture
        // a run that fails fails the snippet (one that shows an error flips it: Effect.flip)
        const pending: Array<Promise<unknown>> = []
        const failures: Array<unknown> = []
        ;(globalThis as { __snippetTrack?: unknown }).__snippetTrack =
          (run: (...args: Array<unknown>) => unknown) =>
          (...args: Array<unknown>) => {
            const result = run(...args)
            if (result instanceof Promise)
              pending.push(result.then(undefined, (error) => failures.push(error)))
            else if (isFiber(result))
              pending.push(
                new Promise((resolve) =>
                  result.addObserver((exit) => {
                    if ((exit as { _tag?: unknown })._tag === "Failure") failures.push(String(exit))
                    resolve(exit)
                  })
                )
              )
            return result
          }
        await import(pathToFileURL(`${root}${dir}/${entry.file}`).href)
        // what the snippet started may start more: wait until nothing new is pending
        for (let seen = 0; seen < pending.length;) {
          const batch = pending.slice(seen)
          seen = pending.length
          await Promise.allSettled(batch)
        }
        expect(failures.map(String), `${entry.where} failed`).toEqual([])
        const actual = printed.map((line) => line.trimEnd())
        const shown = actual.map((line, i) =>
          entry.prints[i] !== undefined && matches(entry.prints[i], line) ? entry.prints[i] : line
        )
        expect(shown, `${entry.where} printed:\n${actual.join("\n")}`).toEqual(entry.prints)
      },
      10_000
    )
  }
})

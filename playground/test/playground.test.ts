/**
 * The playground in a real browser: the built site over loopback HTTP in headless
 * Chromium, every demo strategy on overload-2000, the table checked cell by cell
 * against the demo's rows computed here from the same code.
 */
import { Simulation } from "@sluice/simulation"
import { Effect } from "effect"
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises"
import type { Server } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { gzipSync } from "node:zlib"
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runOne } from "../../examples/sim/run.js"
import { findScenario } from "../../examples/sim/scenarios.js"
import { strategies } from "../../examples/sim/strategies.js"
import { tableHeader, tableRow } from "../../examples/sim/table.js"
import { launchChromium, type Browser } from "../serve/browser.js"
import { strategyWith } from "../src/options.js"
import { buildPlayground, serveStatic } from "../serve/static.js"

/** Every column but the last (wall time differs between any two runs). */
const COMPARED = tableHeader.length - 1

let outDir: string
let server: Server
let url: string
let browser: Browser

beforeAll(async () => {
  outDir = await mkdtemp(join(tmpdir(), "sluice-playground-"))
  await buildPlayground(outDir)
  ;({ server, url } = await serveStatic(outDir))
  browser = await launchChromium()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  server?.close()
  if (outDir !== undefined) await rm(outDir, { recursive: true, force: true })
})

/** A page that records every console error and uncaught exception. */
const openPage = async (hash: string): Promise<{ page: Page; errors: Array<string> }> => {
  const page = await browser.context.newPage()
  const errors: Array<string> = []
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text())
  })
  page.on("pageerror", (e) => errors.push(e.message))
  await page.goto(`${url}#${hash}`)
  return { page, errors }
}

const settled = (page: Page) =>
  page.waitForFunction(
    () => ["done", "invalid", "failed"].includes(document.body.dataset.state ?? ""),
    null,
    {
      timeout: 90_000
    }
  )

describe("playground", () => {
  it("ships at most 500 KB of gzipped JavaScript (page and worker)", async () => {
    const assets = join(outDir, "assets")
    const scripts = (await readdir(assets)).filter((f) => f.endsWith(".js"))
    expect(scripts.length).toBeGreaterThanOrEqual(2)
    let gzipped = 0
    for (const file of scripts) gzipped += gzipSync(await readFile(join(assets, file)), { level: 9 }).length
    expect(gzipped).toBeLessThanOrEqual(500 * 1024)
  })

  it("runs overload-2000 with every demo strategy and shows the demo's rows", async () => {
    const names = strategies.map((s) => s.name)
    const { page, errors } = await openPage(`scenario=overload-2000&strategies=${names.join(",")}&seed=1`)
    await settled(page)
    expect(await page.evaluate(() => document.body.dataset.state)).toBe("done")
    const shown = await page.$$eval("#table tbody tr", (rows) =>
      rows.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? ""))
    )

    const scenario = findScenario("overload-2000")!
    const expected: Array<ReadonlyArray<string>> = []
    for (const strategy of strategies) {
      const run = await Effect.runPromise(runOne(scenario, strategy, { seed: 1 }))
      expected.push(tableRow(run.json).slice(0, COMPARED))
    }
    expect(shown.map((row) => row.slice(0, COMPARED))).toEqual(expected)
    // Four charts, each with a line per strategy that recorded its series.
    expect(await page.$$eval("#charts svg", (svgs) => svgs.length)).toBe(4)
    expect(await page.$$eval("#charts svg:first-child path.line", (paths) => paths.length)).toBe(names.length)
    // The state is in the URL: the same link reproduces the run.
    expect(new URLSearchParams(new URL(page.url()).hash.slice(1)).get("strategies")).toBe(names.join(","))
    expect(errors).toEqual([])
    await page.close()
  }, 120_000)

  it("runs a strategy with changed options, kept in the URL", async () => {
    const options = { naive: { maxAttempts: 3 }, "cwnd-reno": { backoffRatio: 0.7 } }
    const { page, errors } = await openPage(
      `scenario=overload-2000&strategies=naive,cwnd-reno&options=${encodeURIComponent(JSON.stringify(options))}&seed=1`
    )
    await settled(page)
    expect(await page.evaluate(() => document.body.dataset.state)).toBe("done")
    const shown = await page.$$eval("#table tbody tr", (rows) =>
      rows.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? ""))
    )
    const scenario = findScenario("overload-2000")!
    const expected: Array<ReadonlyArray<string>> = []
    for (const [name, o] of Object.entries(options)) {
      const run = await Effect.runPromise(runOne(scenario, strategyWith(name, o)!, { seed: 1 }))
      expected.push(tableRow(run.json).slice(0, COMPARED))
    }
    expect(shown.map((row) => row.slice(0, COMPARED))).toEqual(expected)
    // Not the built-ins: 3 attempts per operation at most, where the demo's naive makes 19,550.
    expect(Number(shown[0]![2])).toBeLessThanOrEqual(3 * 2000)
    expect(await page.inputValue('input[data-option="naive.maxAttempts"]')).toBe("3")
    expect(errors).toEqual([])
    await page.close()
  }, 120_000)

  it("shows the CLI's error for a bad scenario", async () => {
    const { page, errors } = await openPage("scenario=overload-2000&strategies=tempo&seed=1")
    await settled(page)
    const bad = [
      JSON.stringify({ ...Simulation.overload2000, operationsPerClient: -5 }),
      JSON.stringify({
        ...Simulation.overload2000,
        server: { ...Simulation.overload2000.server, maxBusy: 0 }
      }),
      '{ "name": "broken",'
    ]
    for (const text of bad) {
      // What `npm run sim -- --scenario file.json` prints for this file (cli.ts: `fail(error.message)`).
      const cliError = (await Effect.runPromise(Effect.flip(Simulation.parseScenarioJson(text)))).message
      await page.fill("#json", text)
      await page.click("#run")
      await settled(page)
      expect(await page.evaluate(() => document.body.dataset.state)).toBe("invalid")
      expect(await page.textContent("#error")).toBe(cliError)
    }
    expect(errors).toEqual([])
    await page.close()
  }, 120_000)
})

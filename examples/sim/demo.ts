/**
 * The demo: every strategy on overload-2000 in virtual time, a table, and SVG charts
 * in out/.
 *
 *   npm run demo
 */
import { Effect } from "effect"
import { mkdir, writeFile } from "node:fs/promises"
import { join } from "node:path"
import * as Charts from "@sluice/simulation/Charts"
import { runOne, type SimRun } from "./run.js"
import { findScenario } from "./scenarios.js"
import { strategies } from "./strategies.js"
import { formatTable } from "./table.js"

const OUT = "out"
const SCENARIO = "overload-2000"
/** `--docs` also refreshes the README's chart (a copy of the log-scale request-rate chart). */
const DOCS_CHART = "docs/overload-2000.svg"

const main = async () => {
  const started = performance.now()
  const scenario = findScenario(SCENARIO)!
  const tty = process.stdout.isTTY === true
  process.stdout.write(`Sluice simulation: ${scenario.name}\n  ${scenario.description}\n\n`)
  const runs: Array<SimRun> = []
  for (const [i, strategy] of strategies.entries()) {
    const label = `[${i + 1}/${strategies.length}] ${strategy.name}`
    const progress = (elapsedMillis: number) => {
      if (tty) process.stdout.write(`\r${label}: ${(elapsedMillis / 1000).toFixed(1)} s virtual...`)
    }
    if (!tty) process.stdout.write(`${label}...`)
    const run = await Effect.runPromise(runOne(scenario, strategy, { seed: 1, onProgress: progress }))
    runs.push(run)
    const j = run.json
    process.stdout.write(
      `${tty ? `\r${label}:` : ""} ${j.completionSeconds.toFixed(1)} s virtual, ${j.attempts} attempts, ${j.wallMs.toFixed(0)} ms wall${tty ? "          " : ""}\n`
    )
  }
  process.stdout.write(`\noptimal completion: ${runs[0]!.json.optimalSeconds.toFixed(2)} s\n\n`)
  process.stdout.write(`${formatTable(runs)}\n\n`)

  await mkdir(OUT, { recursive: true })
  const charts = Charts.demoCharts(
    scenario.name,
    runs.map((r) => ({ strategy: r.strategy.name, timeSeries: r.result.timeSeries }))
  )
  for (const [file, spec] of Object.entries(charts)) {
    const svg = await Charts.renderSvg(spec)
    await writeFile(join(OUT, file), svg)
    process.stdout.write(`wrote ${join(OUT, file)}\n`)
    if (process.argv.includes("--docs") && file === `${SCENARIO}-request-rate-log.svg`) {
      await mkdir("docs", { recursive: true })
      await writeFile(DOCS_CHART, svg)
      process.stdout.write(`wrote ${DOCS_CHART}\n`)
    }
  }
  process.stdout.write(`\ndone in ${((performance.now() - started) / 1000).toFixed(1)} s wall\n`)
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})

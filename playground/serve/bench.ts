/**
 * Times all eight demo strategies on overload-2000 in the page (headless Chromium, the
 * Web Worker) against the CLI's runner in this Node process, alternating, and prints
 * JSON: wall milliseconds of each, their ratio, and the load average beside them.
 *
 *   npx tsx playground/serve/bench.ts [rounds=3]
 */
import { Effect } from "effect"
import { loadavg } from "node:os"
import { runOne } from "../../examples/sim/run.js"
import { findScenario } from "../../examples/sim/scenarios.js"
import { strategies } from "../../examples/sim/strategies.js"
import { launchChromium } from "./browser.js"
import { buildPlayground, serveStatic } from "./static.js"

const rounds = Number(process.argv[2] ?? "3")
const { server, url } = await serveStatic(await buildPlayground())
const browser = await launchChromium()
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
try {
  const page = await browser.context.newPage()
  const pageMs: Array<number> = []
  const cliMs: Array<number> = []
  const scenario = findScenario("overload-2000")!
  for (let i = 0; i < rounds; i++) {
    await page.goto(
      `${url}#scenario=overload-2000&strategies=${strategies.map((s) => s.name).join(",")}&seed=1&r=${i}`
    )
    await page.reload()
    await page.waitForFunction(() => document.body.dataset.state === "done", null, { timeout: 120_000 })
    pageMs.push(Number(await page.evaluate(() => document.body.dataset.wallMs)))
    const started = performance.now()
    for (const strategy of strategies) await Effect.runPromise(runOne(scenario, strategy, { seed: 1 }))
    cliMs.push(Math.round(performance.now() - started))
  }
  const page_ = median(pageMs)
  const cli = median(cliMs)
  process.stdout.write(
    `${JSON.stringify({ scenario: "overload-2000", strategies: strategies.length, rounds, pageMs, cliMs, medianPageMs: page_, medianCliMs: cli, pageOverCli: +(page_ / cli).toFixed(2), loadavg: loadavg().map((x) => +x.toFixed(2)) })}\n`
  )
} finally {
  await browser.close()
  server.close()
}

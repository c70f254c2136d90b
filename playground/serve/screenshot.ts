/**
 * Refreshes docs/playground.png: builds the playground, runs every strategy on
 * overload-2000 in headless Chromium and photographs the finished page.
 *
 *   npx tsx playground/serve/screenshot.ts
 */
import { join } from "node:path"
import { launchChromium } from "./browser.js"
import { buildPlayground, playgroundRoot, serveStatic } from "./static.js"

const out = join(playgroundRoot, "..", "docs", "playground.png")
const { server, url } = await serveStatic(await buildPlayground())
const browser = await launchChromium({ width: 1400, height: 860 })
try {
  const page = await browser.context.newPage()
  await page.goto(url)
  await page.waitForFunction(() => document.body.dataset.state === "done", null, { timeout: 120_000 })
  // Let the last line finish drawing in.
  await page.waitForTimeout(1000)
  await page.screenshot({ path: out, fullPage: false })
  process.stdout.write(`wrote ${out} (${await page.locator("#status").textContent()})\n`)
} finally {
  await browser.close()
  server.close()
}

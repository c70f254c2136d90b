/**
 * Headless Chromium for the playground's browser test and screenshot: Debian's
 * `chromium` package (`.ci/run` installs it), driven by playwright-core.
 */
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { chromium, type BrowserContext } from "playwright-core"

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"

/**
 * The flags this closed network needs: without the background-networking ones
 * Chromium's own connections are refused and it logs errors the test would count.
 */
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync"
]

export interface Browser {
  readonly context: BrowserContext
  readonly close: () => Promise<void>
}

/** A headless Chromium with a fresh profile directory, removed again on close. */
export const launchChromium = async (viewport = { width: 1480, height: 1000 }): Promise<Browser> => {
  const profile = await mkdtemp(join(tmpdir(), "sluice-playground-chromium-"))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport
  })
  return {
    context,
    close: async () => {
      await context.close()
      await rm(profile, { recursive: true, force: true })
    }
  }
}

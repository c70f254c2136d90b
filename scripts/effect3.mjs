// Runs an npm script of the 3.x line from the main root. The 3.x line (effect3/) is its own npm
// root with its own lockfile, so that it resolves effect 3 while the main root resolves effect 4;
// on a fresh clone its node_modules are missing, and this installs them (`npm ci`) first.
// Usage: node scripts/effect3.mjs <script> (e.g. test, build), or `install` to install only (the
// main line's cross-line wire test and bench:overhead run 3.x code from effect3/ too).
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const effect3 = join(dirname(fileURLToPath(import.meta.url)), "..", "effect3")
const npm = (args) => {
  const { status } = spawnSync("npm", args, { cwd: effect3, stdio: "inherit" })
  if (status !== 0) process.exit(status ?? 1)
}
if (!existsSync(join(effect3, "node_modules", ".package-lock.json"))) {
  console.log("effect3: installing the 3.x line's dependencies (npm ci)")
  npm(["ci", "--no-audit", "--no-fund"])
}
const script = process.argv[2] ?? "test"
if (script !== "install") npm(["run", script])

// The npm registry reachable on the build machines serves only this platform's
// builds of packages such as @rollup/rollup-<os>-<cpu>. npm then leaves the
// other platforms' optional dependencies out of package-lock.json, and `npm ci`
// rejects the lockfile as out of sync. This adds a lock entry for each missing
// optional platform package, with the os/cpu its name declares, so npm skips it
// as incompatible (it is never fetched). Run after `npm install` changes the lock.
// Usage: node scripts/fix-lock-optional.mjs [root] (default: this repository's root; the 3.x
// line's root is effect3).
import { readFileSync, writeFileSync } from "node:fs"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"

const path =
  process.argv[2] === undefined
    ? new URL("../package-lock.json", import.meta.url)
    : pathToFileURL(resolve(process.argv[2], "package-lock.json"))
const lock = JSON.parse(readFileSync(path, "utf8"))
const packages = lock.packages

const osNames = [
  "android",
  "darwin",
  "freebsd",
  "linux",
  "openbsd",
  "netbsd",
  "sunos",
  "win32",
  "aix",
  "openharmony"
]
const aliases = { windows: "win32", macos: "darwin", mac: "darwin" }
const cpuNames = [
  "arm64",
  "x64",
  "ia32",
  "arm",
  "ppc64",
  "riscv64",
  "s390x",
  "loong64",
  "mips64el",
  "wasm32",
  "loongarch64"
]
const cpuAliases = {
  x86_64: "x64",
  aarch64: "arm64",
  armv7: "arm",
  gnueabihf: "arm",
  loongarch64: "loong64",
  x86: "ia32",
  32: "ia32",
  64: "x64"
}

const infer = (name) => {
  const parts = name.split("/").pop().split("-")
  let os, cpu
  for (const part of parts) {
    if (!os && (osNames.includes(part) || aliases[part])) os = aliases[part] ?? part
    if (cpuNames.includes(part)) cpu = part
    else if (!cpu && cpuAliases[part]) cpu = cpuAliases[part]
  }
  if (name.includes("wasm")) return { cpu: ["wasm32"] }
  const entry = {}
  if (os) entry.os = [os]
  if (cpu) entry.cpu = [cpu]
  return Object.keys(entry).length > 0 ? entry : { os: ["none"] }
}

let added = 0
for (const [key, pkg] of Object.entries(packages)) {
  for (const [dep, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const base = key === "" ? "" : `${key}/`
    const candidates = [`${base}node_modules/${dep}`, `node_modules/${dep}`]
    if (candidates.some((c) => packages[c])) continue
    packages[`node_modules/${dep}`] = { version, optional: true, ...infer(dep) }
    added++
  }
}
const sorted = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0))
)
lock.packages = sorted
writeFileSync(path, JSON.stringify(lock, null, 2) + "\n")
console.log(`added ${added} optional platform entries`)

// Packs every publishable package, installs the tarballs into a fresh app outside the
// repository (no network: npm --offline for the tarballs, the pinned effect / @effect/*
// peers linked from this repository's node_modules), then:
//   (a) compiles a small library built on Sluice with `declaration: true` and checks that its
//       `.d.ts` names no `/internal/` module (every public type must be nameable from a
//       public subpath);
//   (b) typechecks a consumer of that library and of Sluice WITHOUT skipLibCheck, with
//       `strict` and `exactOptionalPropertyTypes`, under moduleResolution NodeNext and Bundler.
// Usage: node scripts/pack-check.mjs [--keep] (prints the temp dir with --keep).
// Run by test/publish/pack.test.ts. Exits non-zero with the reasons on failure.
import { execFile, execFileSync } from "node:child_process"
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { performance } from "node:perf_hooks"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const keep = process.argv.includes("--keep")
const started = performance.now()
const failures = []
const log = (message) =>
  console.log(`[pack-check ${((performance.now() - started) / 1000).toFixed(1)} s] ${message}`)
const run = (cmd, args, cwd) => {
  try {
    return execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
  } catch (error) {
    throw new Error(`${cmd} ${args.join(" ")} failed in ${cwd}:\n${error.stdout ?? ""}${error.stderr ?? ""}`)
  }
}
const tsc = join(root, "node_modules", "typescript", "bin", "tsc")
// Diagnostics in third-party declaration files (reached through the peers, e.g. @effect/platform's
// DOM types or vega-lite under exactOptionalPropertyTypes) are counted, not failed: they are not
// ours to fix, and they are what a consumer without skipLibCheck meets with or without Sluice.
const thirdParty = { count: 0, files: new Set() }
const runTsc = async (project, cwd) => {
  const output = await new Promise((resolve) =>
    execFile(process.execPath, [tsc, "-p", project], { cwd, maxBuffer: 64 << 20 }, (error, stdout, stderr) =>
      resolve(error === null ? "" : `${stdout}${stderr}`.trim() || String(error))
    )
  )
  if (output === "") return ""
  const ours = []
  for (const chunk of output.split(/\n(?=\S)/)) {
    const file = /^(.*?)\(\d+,\d+\): error/.exec(chunk)?.[1]
    const outside = file !== undefined && (file.startsWith("../") || file.startsWith("/"))
    const dependency =
      file !== undefined &&
      file.includes("node_modules/") &&
      !/node_modules\/(@sluice|sluice-lib)\//.test(file)
    if (outside || dependency) {
      thirdParty.count++
      thirdParty.files.add(file.replace(/^.*node_modules\//, ""))
    } else ours.push(chunk)
  }
  return ours.join("\n")
}
const json = (value) => JSON.stringify(value, null, 2) + "\n"

// --- 1. packages ---------------------------------------------------------------------------
const rootPackage = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
const packages = rootPackage.workspaces
  .filter((dir) => dir.startsWith("packages/"))
  .map((dir) => ({
    dir: join(root, dir),
    manifest: JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"))
  }))
  .filter((p) => p.manifest.private !== true)

log("npm run build")
run("npm", ["run", "build", "--silent"], root)

const work = mkdtempSync(join(tmpdir(), "sluice-pack-"))
const tarballs = join(work, "tarballs")
mkdirSync(tarballs)
log(`npm pack ${packages.map((p) => p.manifest.name).join(" ")} → ${work}`)
const packed = JSON.parse(
  run("npm", ["pack", "--json", "--pack-destination", tarballs, ...packages.map((p) => p.dir)], root)
)
for (const entry of packed) {
  const files = entry.files.map((f) => f.path)
  for (const required of ["LICENSE", "README.md", "package.json", "dist/index.js", "dist/index.d.ts"]) {
    if (!files.includes(required)) failures.push(`${entry.name}: the tarball has no ${required}`)
  }
  const stray = files.filter((f) => /(^|\/)test\/|\.test\.|tsbuildinfo/.test(f))
  if (stray.length > 0) failures.push(`${entry.name}: the tarball holds ${stray.join(", ")}`)
  const pkg = packages.find((p) => p.manifest.name === entry.name)
  const manifest = pkg.manifest
  const license = join(pkg.dir, "LICENSE")
  if (existsSync(license) && readFileSync(license, "utf8") !== readFileSync(join(root, "LICENSE"), "utf8")) {
    failures.push(`${entry.name}: LICENSE differs from the repository's LICENSE`)
  }
  for (const field of ["license", "description", "repository", "engines", "keywords"]) {
    if (manifest[field] === undefined) failures.push(`${entry.name}: package.json has no "${field}"`)
  }
}

// --- 2. a fresh app ------------------------------------------------------------------------
const app = join(work, "app")
mkdirSync(app)
writeFileSync(join(app, "package.json"), json({ name: "sluice-consumer", private: true, type: "module" }))
// Packages whose dependencies are all @sluice/* are installed by npm itself, offline. The
// others (simulation: vega) would need the registry, so they are unpacked the way npm does
// and their dependencies linked from this repository.
const selfContained = packed.filter((entry) => {
  const deps = Object.keys(packages.find((p) => p.manifest.name === entry.name).manifest.dependencies ?? {})
  return deps.every((d) => d.startsWith("@sluice/"))
})
log(`npm install --offline ${selfContained.map((e) => e.filename).join(" ")}`)
run(
  "npm",
  [
    "install",
    "--offline",
    "--no-audit",
    "--no-fund",
    "--no-package-lock",
    "--legacy-peer-deps",
    ...selfContained.map((e) => join(tarballs, e.filename))
  ],
  app
)
const link = (name) => {
  const target = join(app, "node_modules", name)
  if (existsSync(target)) return
  mkdirSync(dirname(target), { recursive: true })
  symlinkSync(join(root, "node_modules", name), target, "dir")
}
for (const entry of packed.filter((e) => !selfContained.includes(e))) {
  const target = join(app, "node_modules", entry.name)
  mkdirSync(target, { recursive: true })
  run("tar", ["-xzf", join(tarballs, entry.filename), "-C", target, "--strip-components=1"], app)
  for (const dep of Object.keys(
    packages.find((p) => p.manifest.name === entry.name).manifest.dependencies ?? {}
  )) {
    if (!dep.startsWith("@sluice/")) link(dep)
  }
}
// the peers, at the versions this repository pins (and tests against)
const peers = new Set()
for (const p of packages) for (const name of Object.keys(p.manifest.peerDependencies ?? {})) peers.add(name)
for (const name of [...peers, "@effect/platform-node", "@types/node"]) link(name)
for (const p of packages) {
  for (const [name, range] of Object.entries(p.manifest.peerDependencies ?? {})) {
    const installed = JSON.parse(
      readFileSync(join(root, "node_modules", name, "package.json"), "utf8")
    ).version
    const m = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(range)
    const v = installed.split(".").map(Number)
    const ok =
      m !== null &&
      (Number(m[1]) > 0
        ? v[0] === Number(m[1]) && (v[1] > Number(m[2]) || (v[1] === Number(m[2]) && v[2] >= Number(m[3])))
        : v[0] === 0 && v[1] === Number(m[2]) && v[2] >= Number(m[3]))
    if (!ok) failures.push(`${p.manifest.name}: peer ${name}@${range} does not admit the tested ${installed}`)
  }
}

// --- 3. the library: every public export, re-exported with an inferred type ----------------
// `id(M.x)` makes the declaration emitter print the type of each value, and `t(...)` the
// resolved form of each type, so a type that is only nameable through `internal/` shows up.
const lines = [
  "// generated by scripts/pack-check.mjs",
  "const id = <T>(value: T): T => value",
  "const t = <T>(): T => undefined as unknown as T"
]
const checks = [
  "// generated by scripts/pack-check.mjs: optional fields of public option types accept undefined",
  "type Missing<T> = T extends ((...args: Array<any>) => any) | ReadonlyArray<any> | string | number | boolean",
  "  ? never",
  "  : T extends object",
  "    ? {",
  "        [K in keyof T]-?: K extends symbol",
  "          ? never",
  "          : {} extends Pick<T, K>",
  "            ? { [P in K]: undefined } extends Pick<T, K>",
  "              ? never",
  "              : K",
  "            : never",
  "      }[keyof T]",
  "    : never",
  "const ok = <T extends never>(): T | undefined => undefined"
]
for (const p of packages) {
  const short = p.manifest.name.replace("@sluice/", "")
  for (const file of readdirSync(join(p.dir, "src")).filter((f) => f.endsWith(".ts") && f !== "index.ts")) {
    const module = file.replace(/\.ts$/, "")
    const ns = `${short}_${module}`
    const source = ts.createSourceFile(
      file,
      readFileSync(join(p.dir, "src", file), "utf8"),
      ts.ScriptTarget.ES2022
    )
    const exported = (node) => node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword) ?? false
    const body = []
    const optionChecks = []
    for (const node of source.statements) {
      if (!exported(node)) continue
      if (ts.isVariableStatement(node)) {
        for (const d of node.declarationList.declarations) {
          body.push(`export const v_${ns}_${d.name.text} = id(${ns}.${d.name.text})`)
          if (
            d.type !== undefined &&
            ts.isFunctionTypeNode(d.type) &&
            (d.type.typeParameters ?? []).length === 0
          ) {
            d.type.parameters.forEach(
              (parameter, i) =>
                /options|config|tuning/i.test(parameter.name.getText(source)) &&
                optionChecks.push(
                  `ok<Missing<NonNullable<Parameters<typeof ${ns}.${d.name.text}>[${i}]>>>() // ${p.manifest.name}/${module} ${d.name.text} parameter ${i}`
                )
            )
          }
        }
      } else if (ts.isFunctionDeclaration(node) && node.name) {
        body.push(`export const v_${ns}_${node.name.text} = id(${ns}.${node.name.text})`)
      } else if (ts.isClassDeclaration(node) && node.name) {
        body.push(`export const v_${ns}_${node.name.text} = id(${ns}.${node.name.text})`)
        const arity = (node.typeParameters ?? []).length
        const args = arity === 0 ? "" : `<${Array(arity).fill("any").join(", ")}>`
        body.push(`export const i_${ns}_${node.name.text} = t<${ns}.${node.name.text}${args}>()`)
      } else if ((ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) && node.name) {
        const arity = (node.typeParameters ?? []).length
        const args = arity === 0 ? "" : `<${Array(arity).fill("any").join(", ")}>`
        body.push(`export const t_${ns}_${node.name.text} = t<${ns}.${node.name.text}${args}>()`)
        if (ts.isInterfaceDeclaration(node)) {
          // every member, resolved: a member typed with an internal type shows up here
          const type = `${ns}.${node.name.text}${args}`
          body.push(
            `export const m_${ns}_${node.name.text} = t<{ [K in Exclude<keyof ${type}, symbol>]: ${type}[K] }>()`
          )
        }
        if (arity === 0 && /(?<!Invalid)Options$|Tuning$/.test(node.name.text)) {
          optionChecks.push(
            `ok<Missing<${ns}.${node.name.text}>>() // ${p.manifest.name}/${module} ${node.name.text}`
          )
        }
      }
    }
    if (body.length > 0) {
      lines.push(`import * as ${ns} from "${p.manifest.name}/${module}"`, ...body)
    }
    if (optionChecks.length > 0) {
      checks.push(`import type * as ${ns} from "${p.manifest.name}/${module}"`, ...optionChecks)
    }
  }
}
// imports first
const sortImports = (all) => [
  ...all.filter((l) => l.startsWith("import ")),
  ...all.filter((l) => !l.startsWith("import "))
]

const lib = join(app, "node_modules", "sluice-lib")
mkdirSync(join(lib, "src"), { recursive: true })
writeFileSync(join(lib, "src", "exports.ts"), sortImports(lines).join("\n") + "\n")
writeFileSync(
  join(lib, "src", "index.ts"),
  `// a small library built on Sluice, with inferred (not annotated) types
import { Errors } from "@sluice/core"
import { Backoff, Retry, RetryBudget } from "@sluice/retry"
import { ConcurrencyLimiter, CongestionWindow } from "@sluice/adaptive"
import { SluiceHttpClient } from "@sluice/http"
import { Effect, Layer } from "effect"

export * as Generated from "./exports.js"

export const withRetries = <A, E, R>(effect: Effect.Effect<A, E, R>, maxAttempts?: number) =>
  Effect.flatMap(RetryBudget.forKey("lib"), (budget) =>
    Retry.unsafeMake({ maxAttempts, budget, schedule: Backoff.exponential({ base: "10 millis" }).pipe(Backoff.jitter("full")) }).apply(
      effect
    )
  )
export const busy = Effect.fail(new Errors.Overloaded({ reason: "busy" }))
export const budgetLayer = (ratio?: number) => RetryBudget.layer({ ratio })
export const limiterLayer = ConcurrencyLimiter.layer({ algorithm: CongestionWindow.factory() })
export const clientLayer = SluiceHttpClient.layer({ maxAttempts: 3 })
export const all = Layer.merge(budgetLayer(0.1), limiterLayer)
`
)
writeFileSync(
  join(lib, "package.json"),
  json({
    name: "sluice-lib",
    version: "1.0.0",
    type: "module",
    exports: { ".": { types: "./dist/index.d.ts", default: "./dist/index.js" } }
  })
)
const strict = {
  target: "ES2022",
  lib: ["ES2022"],
  strict: true,
  exactOptionalPropertyTypes: true,
  types: ["node"],
  skipLibCheck: false
}
writeFileSync(
  join(lib, "tsconfig.json"),
  json({
    compilerOptions: {
      ...strict,
      module: "NodeNext",
      moduleResolution: "NodeNext",
      declaration: true,
      emitDeclarationOnly: true,
      skipLibCheck: true,
      rootDir: "src",
      outDir: "dist"
    },
    include: ["src"]
  })
)
log("tsc: the library (declaration: true)")
const libErrors = await runTsc("tsconfig.json", lib)
if (libErrors !== "") failures.push(`the library does not compile:\n${libErrors}`)
for (const file of existsSync(join(lib, "dist")) ? readdirSync(join(lib, "dist")) : []) {
  if (!file.endsWith(".d.ts")) continue
  const text = readFileSync(join(lib, "dist", file), "utf8")
  const leaks = [...new Set(text.match(/["'][^"'\n]*\/internal\/[^"'\n]*["']/g) ?? [])]
  if (leaks.length > 0) failures.push(`sluice-lib/dist/${file} imports internal modules: ${leaks.join(", ")}`)
}

// --- 4. the consumer ---------------------------------------------------------------------
const consumer = join(app, "src")
mkdirSync(consumer)
writeFileSync(join(consumer, "options.ts"), sortImports(checks).join("\n") + "\n")
writeFileSync(
  join(consumer, "main.ts"),
  `import { Errors } from "@sluice/core"
import { QuotaStore } from "@sluice/quota"
import { Backoff, Retry } from "@sluice/retry"
import { AimdInterval } from "@sluice/adaptive"
import { Middleware } from "@sluice/http"
import { Simulation } from "@sluice/simulation"
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { Generated, all, budgetLayer, busy, clientLayer, withRetries } from "sluice-lib"

// options read from configuration: every field may be undefined
interface Config {
  readonly maxAttempts: number | undefined
  readonly maxClients: number | undefined
  readonly factor: number | undefined
}
declare const cfg: Config

export const policy = Retry.withRetry({ maxAttempts: cfg.maxAttempts })
export const store = QuotaStore.layerMemory({ maxClients: cfg.maxClients })
export const backoff = Backoff.exponential({ base: "100 millis", factor: cfg.factor })

// the library's inferred types are usable, and precise (not any)
export const retried = withRetries(busy, cfg.maxAttempts)
const dontRetry: Effect.Effect<never, Errors.DontRetry, unknown> = retried
void dontRetry
// @ts-expect-error Overloaded must be gone after the library's retry policy
const overloaded: Effect.Effect<never, Errors.Overloaded, unknown> = retried
void overloaded
export const program = retried.pipe(Effect.provide(budgetLayer(0.2)), Effect.provide(all))
export const client = clientLayer.pipe(Layer.provide(NodeHttpClient.layerUndici))
export const generated = Generated.v_core_Errors_Overloaded
export const interval = AimdInterval.layer({ min: "1 second", max: "1 minute" })
export const middleware = Middleware.loadShed
export const sim = Simulation
`
)
const consumerConfigs = {
  "tsconfig.nodenext.json": { module: "NodeNext", moduleResolution: "NodeNext" },
  "tsconfig.bundler.json": { module: "ESNext", moduleResolution: "Bundler" }
}
for (const [name, resolution] of Object.entries(consumerConfigs)) {
  writeFileSync(
    join(app, name),
    json({ compilerOptions: { ...strict, ...resolution, noEmit: true }, include: ["src"] })
  )
}
// one after the other: the test suite runs beside this, and some of its tests measure time
for (const name of Object.keys(consumerConfigs)) {
  log(`tsc: the consumer (${name}; skipLibCheck: false, exactOptionalPropertyTypes)`)
  const errors = await runTsc(name, app)
  if (errors !== "") failures.push(`the consumer does not typecheck with ${name}:\n${errors}`)
}

if (thirdParty.count > 0) {
  log(
    `${thirdParty.count} diagnostic(s) in third-party declarations, not counted: ${[...thirdParty.files].join(", ")}`
  )
}
log(failures.length === 0 ? "ok" : `${failures.length} failure(s)`)
if (keep) log(`kept ${work}`)
else rmSync(work, { recursive: true, force: true })
if (failures.length > 0) {
  console.error(failures.join("\n\n"))
  process.exit(1)
}

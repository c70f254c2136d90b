// Packs every publishable package of one line, installs the tarballs into a fresh app outside the
// repository the way a new user does (`npm install` from the registry with the line's peers, e.g.
// `effect` with no version for the main line, `effect@3.22` for the 3.x line), then:
//   (a) compiles a small library built on Sluice with `declaration: true` and checks that its
//       `.d.ts` names no `/internal/` module (every public type must be nameable from a
//       public subpath);
//   (b) typechecks a consumer of that library and of Sluice WITHOUT skipLibCheck, with
//       `strict` and `exactOptionalPropertyTypes`, under moduleResolution NodeNext and Bundler;
//   (c) compiles the line's README program (its first ```ts block) with tsc and runs it with
//       node: it must print what the README says it prints.
// The line is an npm root: this repository's root (main line) or effect3/ (3.x line); its
// package.json's "packCheck" says what the app installs beside the tarballs and where the
// library and consumer sources are.
// Usage: node scripts/pack-check.mjs [root] [--keep] (prints the temp dir with --keep).
// Run by test/publish/pack.test.ts of each line. Exits non-zero with the reasons on failure.
import { execFile, execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { performance } from "node:perf_hooks"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const repository = join(dirname(fileURLToPath(import.meta.url)), "..")
const root = resolve(process.argv.slice(2).find((a) => !a.startsWith("--")) ?? repository)
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
const tsc = join(repository, "node_modules", "typescript", "bin", "tsc")
// Diagnostics in third-party declaration files (reached through the peers, e.g. @effect/platform's
// DOM types) are counted, not failed: they are not
// ours to fix, and they are what a consumer without skipLibCheck meets with or without Sluice.
const thirdParty = { count: 0, files: new Set() }
// A consumer of the packages' entry points must not reach these at all: vega-lite's declarations
// do not typecheck under exactOptionalPropertyTypes, so the charts that use them are a subpath
// (`@sluice/simulation/Charts`) that only an app which draws charts imports.
const unreachable = /^vega/
const runTsc = async (project, cwd, { forbid } = {}) => {
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
    if (forbid !== undefined && dependency && forbid.test(file.replace(/^.*node_modules\//, ""))) {
      ours.push(`reached a declaration it must not (${forbid}):\n${chunk}`)
    } else if (outside || dependency) {
      thirdParty.count++
      thirdParty.files.add(file.replace(/^.*node_modules\//, ""))
    } else ours.push(chunk)
  }
  return ours.join("\n")
}
const json = (value) => JSON.stringify(value, null, 2) + "\n"

// --- 1. packages ---------------------------------------------------------------------------
const rootPackage = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
const { install, fixtures, readme } = rootPackage.packCheck
// every published package of the line, the shared kernel included (effect3 names it ../packages/kernel)
const packages = rootPackage.workspaces
  .filter((dir) => /(^|\/)packages\//.test(dir))
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
  if (
    existsSync(license) &&
    readFileSync(license, "utf8") !== readFileSync(join(repository, "LICENSE"), "utf8")
  ) {
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
log(`npm install ${packed.map((e) => e.filename).join(" ")} ${install.join(" ")}`)
// --prefer-online: today's registry metadata, so a bare `effect` is today's latest
run(
  "npm",
  [
    "install",
    "--prefer-online",
    "--no-audit",
    "--no-fund",
    ...packed.map((e) => join(tarballs, e.filename)),
    ...install
  ],
  app
)
// the peers' ranges admit the versions this line pins (and tests against): the pinned one, and
// any other major installed beside it under an alias (`"ioredis6": "npm:ioredis@6.0.0"`)
const caretAdmits = (alternative, installed) => {
  const m = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(alternative.trim())
  const v = installed.split(".").map(Number)
  return (
    m !== null &&
    (Number(m[1]) > 0
      ? v[0] === Number(m[1]) && (v[1] > Number(m[2]) || (v[1] === Number(m[2]) && v[2] >= Number(m[3])))
      : v[0] === 0 && v[1] === Number(m[2]) && v[2] >= Number(m[3]))
  )
}
const rootDevDependencies = rootPackage.devDependencies ?? {}
for (const p of packages) {
  for (const [name, range] of Object.entries(p.manifest.peerDependencies ?? {})) {
    const aliases = Object.entries(rootDevDependencies)
      .filter(([, spec]) => typeof spec === "string" && spec.startsWith(`npm:${name}@`))
      .map(([alias]) => alias)
    for (const dir of [name, ...aliases]) {
      const installed = JSON.parse(
        readFileSync(join(root, "node_modules", dir, "package.json"), "utf8")
      ).version
      const ok = range.split("||").some((alternative) => caretAdmits(alternative, installed))
      if (!ok)
        failures.push(`${p.manifest.name}: peer ${name}@${range} does not admit the tested ${installed}`)
    }
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
const subpathLines = [...lines]
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
                // an Effect `Config` (what `layerConfig` reads) is not an options record
                !/^Config\./.test(parameter.type?.getText(source) ?? "") &&
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
    // A module built on an unreachable package (the vega charts) is compiled into the library too,
    // but in a file of its own that the library's entry (what the consumer imports) leaves out.
    const target = source.statements.some(
      (node) => ts.isImportDeclaration(node) && unreachable.test(node.moduleSpecifier.text)
    )
      ? subpathLines
      : lines
    if (body.length > 0) {
      target.push(`import * as ${ns} from "${p.manifest.name}/${module}"`, ...body)
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
writeFileSync(join(lib, "src", "subpaths.ts"), sortImports(subpathLines).join("\n") + "\n")
writeFileSync(join(lib, "src", "index.ts"), readFileSync(join(root, fixtures, "library.ts"), "utf8"))
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
writeFileSync(join(consumer, "main.ts"), readFileSync(join(root, fixtures, "consumer.ts"), "utf8"))
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
  const errors = await runTsc(name, app, { forbid: unreachable })
  if (errors !== "") failures.push(`the consumer does not typecheck with ${name}:\n${errors}`)
}

// --- 5. the README's program, compiled and run -------------------------------------------
const text = readFileSync(join(root, readme), "utf8")
// The program is the README's first ```ts block that says what it prints (`// prints: …`, the
// convention of scripts/check-snippets.mjs; one line of output per comment, in order), or (the
// 3.x line's README) the block followed by "It prints `…`".
const block =
  [...text.matchAll(/```ts\n([\s\S]*?)```/g)]
    .map((m) => {
      const expected = [...m[1].matchAll(/\/\/ prints: (.*)$/gm)].map((p) => p[1].trim())
      return expected.length === 0 ? null : [m[0], m[1], expected.join("\n")]
    })
    .find((b) => b !== null) ??
  // the 3.x line's README says it in prose after the block: "It prints `…`"
  /```ts\n([\s\S]*?)```\n+It prints `([^`]*)`/.exec(text) ??
  undefined
if (block === undefined)
  failures.push(`${readme}: no \`\`\`ts block with a \`// prints:\` comment or followed by "It prints \`…\`"`)
else {
  const dir = join(app, "readme")
  mkdirSync(dir)
  writeFileSync(join(dir, "main.ts"), block[1])
  writeFileSync(
    join(app, "tsconfig.readme.json"),
    json({
      compilerOptions: { ...strict, module: "NodeNext", moduleResolution: "NodeNext", outDir: "readme-out" },
      include: ["readme"]
    })
  )
  log(`tsc + node: the program of ${readme}`)
  const errors = await runTsc("tsconfig.readme.json", app)
  if (errors !== "") failures.push(`${readme}'s program does not compile:\n${errors}`)
  else {
    const output = await new Promise((resolve) =>
      execFile(
        process.execPath,
        [join(app, "readme-out", "main.js")],
        { cwd: app, timeout: 60_000 },
        (error, stdout, stderr) => resolve({ error, stdout: stdout.trim(), stderr })
      )
    )
    if (output.error !== null || output.stdout !== block[2]) {
      failures.push(
        `${readme}'s program printed ${JSON.stringify(output.stdout)}, the README says ${JSON.stringify(block[2])}` +
          (output.error === null ? "" : `\n${output.error}\n${output.stderr}`)
      )
    }
  }
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

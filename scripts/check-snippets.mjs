// Checks the examples of the docs: every ```ts snippet of README.md and packages/*/README.md and
// every `@example` of the public modules (packages/*/src/*.ts). Each is written to .snippets/ (inside
// the repository, so `@sluice/*`, effect and the rest resolve through the workspace) as a module of
// its own, and `tsc --noEmit` runs once over all of them with the repository's strict settings
// (exactOptionalPropertyTypes included; unused names allowed). Snippets that print also run
// (test/docs/examples.test.ts).
//
// Every snippet is one of three kinds, so that none is silently left unrun:
//
// - runs: it prints, and says what with `// prints: <line>` comments, either after the statement
//   that prints (`console.log(total) // prints: 3`) or on a line of their own. Run, the lines it
//   writes with console.log / console.info (Effect's `Console.log` included), split at newlines,
//   must equal the `// prints:` lines in the order of the source; `…` in an expected line stands for
//   any text (timings, ports). The snippet runs as a module; every `Effect.runPromise`,
//   `Effect.runPromiseExit` and `Effect.runFork` it calls is awaited (a fork until its fiber ends)
//   before its output is compared, within a 10 second timeout: a snippet that starts a server
//   listens on port 0 and closes it. Redis is at REDIS_URL (default redis://127.0.0.1:6379).
//   A run that fails fails the snippet: one that shows an error flips it (`Effect.flip`). A
//   program ending in `NodeRuntime.runMain` (which ends the process) is compile-only.
// - compile-only: it typechecks but does not run, with the reason:
//   `// snippet: compile-only — <reason>` as its first line (@example) or
//   `<!-- snippet: compile-only: <reason> -->` on the line before its fence (READMEs).
// - skip: deliberately partial, not even typechecked: `// snippet: skip` as its first line, or
//   `<!-- snippet: skip -->` before the fence.
//
// A snippet that neither prints nor is marked, or is marked compile-only and prints, fails the check.
//
// Usage: node scripts/check-snippets.mjs [--list] [--keep] [--emit-run <dir>]. Run by
// test/docs/snippets.test.ts; `--emit-run` writes the snippets that run, and a manifest.json of
// them, to <dir> (and checks nothing): test/docs/examples.test.ts runs them.
import { execFile } from "node:child_process"
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const out = join(root, ".snippets")
const list = process.argv.includes("--list")
const keep = process.argv.includes("--keep")
const emitRun = process.argv.includes("--emit-run")
  ? process.argv[process.argv.indexOf("--emit-run") + 1]
  : undefined

const packageDirs = readdirSync(join(root, "packages")).map((name) => join(root, "packages", name))
const snippets = []
const skipped = []

// --- READMEs ---------------------------------------------------------------------------------
for (const file of [join(root, "README.md"), ...packageDirs.map((dir) => join(dir, "README.md"))]) {
  let text
  try {
    text = readFileSync(file, "utf8")
  } catch {
    continue
  }
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(\s*)```(ts|typescript)\s*$/.exec(lines[i])
    if (fence === null) continue
    const start = i + 1
    let end = start
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end])) end++
    const where = `${relative(root, file)}:${start}`
    const marker =
      i > 0 ? /<!--\s*snippet:\s*(skip|compile-only)\s*:?\s*(.*?)\s*-->/.exec(lines[i - 1]) : null
    if (marker?.[1] === "skip") skipped.push(where)
    else
      snippets.push({
        where,
        compileOnly: marker === null ? undefined : marker[2],
        code: lines
          .slice(start, end)
          .map((l) => l.slice(fence[1].length))
          .join("\n")
      })
    i = end
  }
}

// --- @example blocks of public modules ----------------------------------------------------------
for (const dir of packageDirs) {
  const src = join(dir, "src")
  // every public module: src/*.ts and its subdirectories (e.g. core's shared/, adaptive's limit/), not internal/
  const modules = readdirSync(src, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(".ts") && !f.split(/[\\/]/).includes("internal"))
  for (const name of modules) {
    const file = join(src, name)
    const lines = readFileSync(file, "utf8").split("\n")
    let inExample = false
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i].replace(/^\s*\*\s?/, "")
      if (/^\s*\*?\s*@example\b/.test(lines[i])) {
        inExample = true
        continue
      }
      if (inExample && /^```(ts|typescript)?\s*$/.test(line)) {
        const start = i + 1
        let end = start
        while (end < lines.length && !/^```\s*$/.test(lines[end].replace(/^\s*\*\s?/, ""))) end++
        const body = lines.slice(start, end).map((l) => l.replace(/^\s*\*( |$)/, ""))
        const where = `${relative(root, file)}:${start}`
        const marker = /^\/\/\s*snippet:\s*(skip|compile-only)\s*(?:[—:-]\s*)?(.*?)\s*$/.exec(body[0] ?? "")
        if (marker?.[1] === "skip") skipped.push(where)
        else
          snippets.push({
            where,
            compileOnly: marker === null ? undefined : marker[2],
            code: body.join("\n")
          })
        i = end
        inExample = false
      } else if (/^\s*\*?\s*@\w+/.test(lines[i]) || /\*\//.test(lines[i])) {
        inExample = false
      }
    }
  }
}

// what a snippet that runs must print: its `// prints:` comments, in the order of the source
for (const snippet of snippets) {
  snippet.prints = [...snippet.code.matchAll(/\/\/ prints: ?(.*)$/gm)].map((m) => m[1].trimEnd())
}
const misfiled = snippets.flatMap((s) =>
  s.compileOnly === undefined
    ? s.prints.length === 0
      ? [`${s.where}: prints nothing (no \`// prints:\`) and is not marked compile-only`]
      : []
    : s.compileOnly === ""
      ? [`${s.where}: compile-only without a reason`]
      : s.prints.length > 0
        ? [`${s.where}: marked compile-only but has \`// prints:\``]
        : []
)
const running = snippets.filter((s) => s.compileOnly === undefined)

if (list) {
  for (const s of snippets)
    console.log(`${s.where} (${s.compileOnly === undefined ? "runs" : `compile-only: ${s.compileOnly}`})`)
  for (const s of skipped) console.log(`${s} (skipped)`)
}

if (emitRun !== undefined) {
  // The runner (test/docs/examples.test.ts) sets globalThis.__snippetTrack, which awaits what the
  // snippet starts; the rewrite keeps the snippet's own lines as they are (one line is added on top).
  const dir = join(root, emitRun)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const manifest = running.map((snippet, index) => {
    const file = `run${String(index).padStart(3, "0")}.ts`
    const code = snippet.code.replace(
      /\bEffect\.(runPromise|runPromiseExit|runFork)\b/g,
      "__snippetTrack(Effect.$1)"
    )
    writeFileSync(
      join(dir, file),
      `const __snippetTrack = (globalThis as any).__snippetTrack; // ${snippet.where}\n${code}\nexport {}\n`
    )
    return { file, where: snippet.where, prints: snippet.prints }
  })
  writeFileSync(join(dir, "manifest.json"), JSON.stringify(manifest, null, 2))
  process.exit(0)
}

rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })
const files = new Map()
snippets.forEach((snippet, index) => {
  const file = `snippet${String(index).padStart(3, "0")}.ts`
  files.set(file, snippet.where)
  // each snippet is a module of its own; the header says where it came from
  writeFileSync(join(out, file), `// ${snippet.where}\n${snippet.code}\nexport {}\n`)
})
writeFileSync(
  join(out, "tsconfig.json"),
  JSON.stringify(
    {
      extends: "../tsconfig.base.json",
      compilerOptions: { noEmit: true, noUnusedLocals: false, noUnusedParameters: false },
      include: ["*.ts"]
    },
    null,
    2
  )
)
const tsc = join(root, "node_modules", "typescript", "bin", "tsc")
const output = await new Promise((resolve) =>
  execFile(
    process.execPath,
    [tsc, "-p", join(out, "tsconfig.json")],
    { cwd: root, maxBuffer: 64 << 20 },
    (error, stdout, stderr) => resolve(error === null ? "" : `${stdout}${stderr}`)
  )
)
// report errors against the README line or source line the snippet came from
const report = output.replace(/(?:\.snippets\/)?(snippet\d+\.ts)\((\d+),(\d+)\)/g, (all, file, line, col) => {
  const where = files.get(file)
  if (where === undefined) return all
  const [path, start] = [
    where.slice(0, where.lastIndexOf(":")),
    Number(where.slice(where.lastIndexOf(":") + 1))
  ]
  return `${path}:${start + Number(line) - 2}:${col} (${file})`
})
console.log(
  `${snippets.length} snippets typechecked (${snippets.filter((s) => s.where.endsWith(".md") || s.where.includes(".md:")).length} from READMEs, ` +
    `${snippets.filter((s) => s.where.includes("/src/")).length} @example blocks): ${running.length} run, ` +
    `${snippets.length - running.length} compile-only; ${skipped.length} skipped${skipped.length > 0 ? `: ${skipped.join(", ")}` : ""}`
)
if (!keep && report === "") rmSync(out, { recursive: true, force: true })
if (report !== "" || misfiled.length > 0) {
  console.error([report.trim(), ...misfiled].filter((l) => l !== "").join("\n"))
  process.exit(1)
}

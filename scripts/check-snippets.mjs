// Typechecks every ```ts snippet of README.md and packages/*/README.md and every `@example`
// of the public modules (packages/*/src/*.ts): each is written to .snippets/ (inside the
// repository, so `@sluice/*`, effect and the rest resolve through the workspace) as a module
// of its own, and `tsc --noEmit` runs once over all of them with the repository's strict
// settings (exactOptionalPropertyTypes included; unused names allowed).
//
// A snippet that is deliberately partial opts out with `<!-- snippet: skip -->` on the line
// before its fence (READMEs) or `// snippet: skip` as its first line (@example).
//
// Usage: node scripts/check-snippets.mjs [--list] [--keep]. Run by test/docs/snippets.test.ts.
import { execFile } from "node:child_process"
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const out = join(root, ".snippets")
const list = process.argv.includes("--list")
const keep = process.argv.includes("--keep")

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
    if (i > 0 && /<!--\s*snippet:\s*skip\s*-->/.test(lines[i - 1])) skipped.push(where)
    else
      snippets.push({
        where,
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
  for (const name of readdirSync(src).filter((f) => f.endsWith(".ts"))) {
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
        if (/^\/\/\s*snippet:\s*skip/.test(body[0] ?? "")) skipped.push(where)
        else snippets.push({ where, code: body.join("\n") })
        i = end
        inExample = false
      } else if (/^\s*\*?\s*@\w+/.test(lines[i]) || /\*\//.test(lines[i])) {
        inExample = false
      }
    }
  }
}

if (list) {
  for (const s of snippets) console.log(s.where)
  for (const s of skipped) console.log(`${s} (skipped)`)
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
    `${snippets.filter((s) => s.where.includes("/src/")).length} @example blocks), ${skipped.length} skipped${skipped.length > 0 ? `: ${skipped.join(", ")}` : ""}`
)
if (!keep && report === "") rmSync(out, { recursive: true, force: true })
if (report !== "") {
  console.error(report.trim())
  process.exit(1)
}

// Every export of every public module (packages/*/src/*.ts; not internal/) carries `@since` and
// `@category` in its doc comment, as Effect's own modules do.
//   node scripts/doc-tags.mjs          lists the exports that miss one (exit 1 if any)
//   node scripts/doc-tags.mjs --fix    adds the missing tags (a guessed category; review it)
// Namespace re-exports of index.ts (`export * as X from`) need only `@since`, as in Effect.
import { readFileSync, readdirSync, writeFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const fix = process.argv.includes("--fix")
export const categories = [
  "models",
  "constructors",
  "combinators",
  "layers",
  "tags",
  "errors",
  "metrics",
  "utils",
  "guards",
  "symbols",
  "constants",
  "schemas",
  "getters",
  "type-level"
]

const guess = (node, name, text, file) => {
  if (/TypeId$/.test(name)) return "symbols"
  if (ts.isClassDeclaration(node)) {
    if (/Context\.(Service|Tag|Reference)\b|GenericTag/.test(text)) return "tags"
    if (/TaggedError|Data\.Error|extends Error/.test(text)) return "errors"
    return "models"
  }
  if (ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) {
    if (
      /Error$|^DontRetry|^Overloaded|^Throttled|^CircuitOpen|^QuotaExceeded|^Retryable|^InvalidOptions/.test(
        name
      )
    )
      return "errors"
    return "models"
  }
  // Effect 4's References and function-form services are constants, not classes
  if (ts.isVariableStatement(node) && /=\s*Context\.(Reference|Service)\b/.test(text)) return "tags"
  if (/^metrics$|Metric|^metric/.test(name)) return "metrics"
  if (/^layer/.test(name)) return "layers"
  if (/^is[A-Z]/.test(name)) return "guards"
  if (/^[A-Z0-9_]+$/.test(name) || /^DEFAULT/.test(name) || /^default[A-Z]/.test(name)) return "constants"
  if (
    /^(make|from|of|fixed|exponential|decorrelated|factory|client|server|sharedSecret|loopback|everyone|none|peer|memory|redis)/.test(
      name
    )
  )
    return "constructors"
  if (/^[A-Z]/.test(name)) {
    if (/Schema\.|Options\b|internal\.[A-Z]\w*(Options|Schema)?$|= plan\.|Literal|Struct/.test(text))
      return "schemas"
    if (/Error/.test(name) || file.endsWith("Errors.ts")) return "errors"
    return "constructors"
  }
  if (
    /^(with|guard|policy|jitter|around|track|withQuota|retry|honor|follow|mapErrors|criticality|loadShed|retryGuard|quota|backpressure|sampled|throttled|limited|paced)/.test(
      name
    )
  )
    return "combinators"
  if (/^(get|current|value|size|stats|count|total|median|p\d+|quantile|rate|cwnd|capacity)/.test(name))
    return "getters"
  return "utils"
}

const missing = []
let added = 0
for (const pkg of readdirSync(join(root, "packages"))) {
  const src = join(root, "packages", pkg, "src")
  for (const name of readdirSync(src).filter((f) => f.endsWith(".ts"))) {
    const file = join(src, name)
    const text = readFileSync(file, "utf8")
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true)
    const edits = []
    for (const node of sf.statements) {
      const exported =
        (ts.canHaveModifiers(node) &&
          ts.getModifiers(node)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) ||
        ts.isExportDeclaration(node) ||
        ts.isExportAssignment(node)
      if (!exported) continue
      const namespaceReexport =
        ts.isExportDeclaration(node) && node.exportClause && ts.isNamespaceExport(node.exportClause)
      const names = ts.isVariableStatement(node)
        ? node.declarationList.declarations.map((d) => d.name.getText(sf))
        : ts.isExportDeclaration(node)
          ? [node.exportClause ? node.exportClause.getText(sf) : "*"]
          : [node.name?.getText(sf) ?? "default"]
      const jsDocs = (node.jsDoc ?? []).filter((d) => d.end <= node.getStart(sf))
      const doc = jsDocs.at(-1)
      const docText = doc ? text.slice(doc.pos, doc.end) : ""
      const needSince = !/@since\b/.test(docText)
      const needCategory = !namespaceReexport && !/@category\b/.test(docText)
      if (!needSince && !needCategory) continue
      const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1
      missing.push(
        `${relative(root, file)}:${line} ${names.join(", ")}${needSince ? " @since" : ""}${needCategory ? " @category" : ""}`
      )
      if (!fix) continue
      const category = needCategory ? guess(node, names[0], node.getText(sf), file) : undefined
      const tags = [
        needSince ? " * @since 0.1.0" : undefined,
        category ? ` * @category ${category}` : undefined
      ].filter((t) => t !== undefined)
      if (doc === undefined) {
        edits.push({ at: node.getStart(sf), text: `/**\n${tags.join("\n")}\n */\n` })
      } else {
        // before the closing `*/` of the comment
        const close = doc.end - 2
        const before = text.slice(doc.pos, close)
        if (!before.includes("\n")) {
          // a one-line comment: /** text */ → a block
          const inner = before.replace(/^\/\*\*\s?/, "").trimEnd()
          edits.push({
            at: doc.pos,
            end: doc.end,
            text: `/**\n${inner ? ` * ${inner}\n *\n` : ""}${tags.join("\n")}\n */`
          })
        } else {
          const lineStart = text.lastIndexOf("\n", close - 1) + 1
          edits.push({ at: lineStart, text: `${tags.join("\n")}\n` })
        }
      }
      added += tags.length
    }
    if (edits.length > 0) {
      let out = text
      for (const e of edits.sort((a, b) => b.at - a.at))
        out = out.slice(0, e.at) + e.text + out.slice(e.end ?? e.at)
      writeFileSync(file, out)
    }
  }
}
if (fix) console.log(`added ${added} tag(s) to ${missing.length} export(s)`)
else if (missing.length > 0) {
  console.error(`${missing.length} export(s) without @since / @category:\n${missing.join("\n")}`)
  process.exit(1)
} else console.log("every export has @since and @category")

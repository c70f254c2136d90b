/**
 * The demo's table: one row per run. Plain functions of the CLI's JSON, so the
 * terminal demo and the browser playground print the same cells.
 */
import type { SimJson } from "./run.js"

export const tableHeader: ReadonlyArray<string> = [
  "strategy",
  "succeeded",
  "attempts",
  "failed",
  "efficiency",
  "completion",
  "x optimal",
  "wall"
]

export const tableRow = (j: SimJson): ReadonlyArray<string> => {
  const efficiency = j.attempts === 0 ? 0 : (j.attempts - j.failedAttempts) / j.attempts
  return [
    j.strategy,
    `${j.succeeded}/${j.operations}`,
    String(j.attempts),
    String(j.failedAttempts),
    `${(100 * efficiency).toFixed(1)}%`,
    `${j.completionSeconds.toFixed(2)} s`,
    // A run that lost operations has no meaningful completion ratio.
    j.succeeded === j.operations ? (j.completionSeconds / j.optimalSeconds).toFixed(2) : "-",
    `${j.wallMs.toFixed(0)} ms`
  ]
}

const pad = (s: string, n: number) => s.padEnd(n)
const lpad = (s: string, n: number) => s.padStart(n)

export const formatTable = (runs: ReadonlyArray<{ readonly json: SimJson }>): string => {
  const rows = runs.map((r) => tableRow(r.json))
  const widths = tableHeader.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i === 0 ? pad(c, widths[i]!) : lpad(c, widths[i]!))).join("  ")
  return [line(tableHeader), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n")
}

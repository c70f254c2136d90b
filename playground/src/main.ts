/**
 * The playground page: scenario and strategies in, charts and the demo's table out.
 * Everything it shows comes from the worker; the page only draws and keeps its state
 * in the URL so a link reproduces a run.
 */
import { Simulation, Strategy } from "@sluice/simulation"
import { tableHeader, tableRow } from "../../examples/sim/table.js"
import { drawChart, type ChartOptions, type Line } from "./chart.js"
import { changedOptions, optionFields, type StrategyOptions } from "./options.js"
import type { RunRequest, StrategyResult, WorkerMessage } from "./protocol.js"

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T

const ui = {
  scenario: $<HTMLSelectElement>("scenario"),
  arrivals: $<HTMLInputElement>("arrivals"),
  operations: $<HTMLInputElement>("operations"),
  seed: $<HTMLInputElement>("seed"),
  json: $<HTMLTextAreaElement>("json"),
  strategies: $<HTMLFieldSetElement>("strategies"),
  run: $<HTMLButtonElement>("run"),
  status: $<HTMLSpanElement>("status"),
  error: $<HTMLPreElement>("error"),
  charts: $<HTMLDivElement>("charts"),
  table: $<HTMLTableElement>("table"),
  optimal: $<HTMLParagraphElement>("optimal")
}

/** Tableau 10, in the demo's strategy order, so a strategy keeps its colour in every chart. */
const PALETTE = [
  "#4e79a7",
  "#f28e2b",
  "#e15759",
  "#76b7b2",
  "#59a14f",
  "#edc948",
  "#b07aa1",
  "#ff9da7",
  "#9c755f",
  "#bab0ac"
]
const strategyNames = Strategy.builtIns.map((s) => s.name)
const colorOf = (name: string) => PALETTE[Math.max(0, strategyNames.indexOf(name)) % PALETTE.length]!
const CUSTOM = "custom"

// --- state in the URL ----------------------------------------------------------------

interface PageState {
  readonly scenario: string
  readonly json: string
  readonly strategies: ReadonlyArray<string>
  readonly options: Readonly<Record<string, StrategyOptions>>
  readonly seed: number
}

const prettyJson = (name: string) => JSON.stringify(Simulation.scenarios[name], null, 2)

const readHash = (): PageState => {
  const params = new URLSearchParams(location.hash.slice(1))
  const named = params.get("scenario") ?? "overload-2000"
  const json = params.get("json")
  const scenario = json !== null ? CUSTOM : named in Simulation.scenarios ? named : "overload-2000"
  const picked = params.get("strategies")
  const seed = Number(params.get("seed") ?? "1")
  let options: Record<string, StrategyOptions> = {}
  try {
    options = JSON.parse(params.get("options") ?? "{}") as Record<string, StrategyOptions>
  } catch {
    // A hand-edited link with broken options: the defaults.
  }
  return {
    options,
    scenario,
    json: json ?? prettyJson(scenario),
    strategies: picked === null ? strategyNames : picked.split(",").filter((s) => strategyNames.includes(s)),
    seed: Number.isSafeInteger(seed) ? seed : 1
  }
}

const currentState = (): PageState => ({
  scenario: ui.scenario.value,
  json: ui.json.value,
  strategies: [...ui.strategies.querySelectorAll<HTMLInputElement>("input[type=checkbox]:checked")].map(
    (i) => i.value
  ),
  options: Object.fromEntries(
    strategyNames
      .map((name) => {
        const read: Record<string, number> = {}
        for (const input of ui.strategies.querySelectorAll<HTMLInputElement>(
          `input[data-option^="${name}."]`
        )) {
          read[input.dataset.option!.slice(name.length + 1)] = Number(input.value)
        }
        return [name, changedOptions(name, read)] as const
      })
      .filter(([, o]) => Object.keys(o).length > 0)
  ),
  seed: Number(ui.seed.value)
})

const writeHash = (state: PageState) => {
  const params = new URLSearchParams()
  if (state.scenario === CUSTOM) params.set("json", JSON.stringify(JSON.parse(state.json)))
  else params.set("scenario", state.scenario)
  params.set("strategies", state.strategies.join(","))
  if (Object.keys(state.options).length > 0) params.set("options", JSON.stringify(state.options))
  params.set("seed", String(state.seed))
  history.replaceState(null, "", `#${params}`)
}

// --- controls --------------------------------------------------------------------------

for (const name of [...Object.keys(Simulation.scenarios), CUSTOM]) {
  ui.scenario.append(new Option(name === CUSTOM ? "custom (edited JSON)" : name, name))
}
for (const s of Strategy.builtIns) {
  const label = document.createElement("label")
  label.title = s.description
  const box = document.createElement("input")
  box.type = "checkbox"
  box.value = s.name
  const swatch = document.createElement("span")
  swatch.className = "swatch"
  swatch.style.background = colorOf(s.name)
  label.append(box, swatch, `${s.name}`)
  for (const field of optionFields[s.name] ?? []) {
    const input = document.createElement("input")
    input.type = "number"
    input.step = String(field.step)
    input.className = "option"
    input.title = field.label
    input.dataset.option = `${s.name}.${field.key}`
    input.value = String(field.defaultValue)
    const small = document.createElement("span")
    small.className = "option-label"
    small.textContent = field.label
    label.append(small, input)
  }
  ui.strategies.append(label)
}

/** The two load knobs edit the JSON, so the JSON stays the one description of the scenario. */
const syncKnobs = () => {
  try {
    const s = JSON.parse(ui.json.value) as { arrivalsPerSecond?: unknown; operationsPerClient?: unknown }
    ui.arrivals.value = String(s.arrivalsPerSecond ?? "")
    ui.operations.value = String(s.operationsPerClient ?? "")
    ui.arrivals.disabled = ui.operations.disabled = false
  } catch {
    ui.arrivals.disabled = ui.operations.disabled = true
  }
}

const editJson = (field: "arrivalsPerSecond" | "operationsPerClient", value: number) => {
  try {
    const s = JSON.parse(ui.json.value) as Record<string, unknown>
    s[field] = value
    if (typeof s.name === "string" && !s.name.endsWith(" (edited)")) s.name = `${s.name} (edited)`
    ui.json.value = JSON.stringify(s, null, 2)
    ui.scenario.value = CUSTOM
  } catch {
    // The JSON does not parse: the knobs are disabled then, nothing to edit.
  }
}

const applyState = (state: PageState) => {
  ui.scenario.value = state.scenario
  ui.json.value = state.scenario === CUSTOM ? formatJson(state.json) : prettyJson(state.scenario)
  ui.seed.value = String(state.seed)
  for (const box of ui.strategies.querySelectorAll<HTMLInputElement>("input")) {
    if (box.type === "checkbox") box.checked = state.strategies.includes(box.value)
  }
  for (const input of ui.strategies.querySelectorAll<HTMLInputElement>("input[data-option]")) {
    const [name, key] = input.dataset.option!.split(".") as [string, string]
    input.value = String(
      state.options[name]?.[key] ?? optionFields[name]!.find((f) => f.key === key)!.defaultValue
    )
  }
  syncKnobs()
}

const formatJson = (text: string) => {
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text
  }
}

ui.scenario.addEventListener("change", () => {
  if (ui.scenario.value !== CUSTOM) ui.json.value = prettyJson(ui.scenario.value)
  syncKnobs()
})
ui.json.addEventListener("input", () => {
  ui.scenario.value = CUSTOM
  syncKnobs()
})
ui.arrivals.addEventListener("change", () => editJson("arrivalsPerSecond", Number(ui.arrivals.value)))
ui.operations.addEventListener("change", () => editJson("operationsPerClient", Number(ui.operations.value)))

// --- output ----------------------------------------------------------------------------

const chartSpecs = (
  scenario: string
): ReadonlyArray<{ options: ChartOptions; pick: (r: StrategyResult) => Line["points"] }> => [
  {
    options: {
      title: `${scenario}: attempts per second (log scale)`,
      yTitle: "attempts / s (log)",
      log: true
    },
    pick: (r) => r.attempts
  },
  { options: { title: `${scenario}: attempts per second`, yTitle: "attempts / s" }, pick: (r) => r.attempts },
  {
    options: { title: `${scenario}: successful attempts per second`, yTitle: "successes / s" },
    pick: (r) => r.successes
  },
  {
    options: { title: `${scenario}: concurrency limit over time`, yTitle: "limit (in flight)", step: true },
    pick: (r) => r.cwnd
  }
]

const drawOutput = (scenario: string, results: ReadonlyArray<StrategyResult>, fresh?: string) => {
  ui.charts.replaceChildren(
    ...chartSpecs(scenario).map(({ options, pick }) =>
      drawChart(
        { ...options, ...(fresh !== undefined ? { fresh } : {}) },
        results.map((r) => ({ strategy: r.json.strategy, color: colorOf(r.json.strategy), points: pick(r) }))
      )
    )
  )
  const head = document.createElement("tr")
  for (const h of tableHeader) head.append(Object.assign(document.createElement("th"), { textContent: h }))
  ui.table.tHead!.replaceChildren(head)
  ui.table.tBodies[0]!.replaceChildren(
    ...results.map((r) => {
      const tr = document.createElement("tr")
      tr.dataset.strategy = r.json.strategy
      for (const [i, cell] of tableRow(r.json).entries()) {
        const td = document.createElement("td")
        td.textContent = cell
        if (i === 0) td.style.borderLeft = `4px solid ${colorOf(r.json.strategy)}`
        tr.append(td)
      }
      return tr
    })
  )
  ui.optimal.textContent =
    results.length > 0
      ? `optimal completion: ${results[0]!.json.optimalSeconds.toFixed(2)} s (the server's capacity, no failures)`
      : ""
}

// --- running ---------------------------------------------------------------------------

const worker = new Worker(new URL("./worker.ts", import.meta.url), { type: "module" })
let runId = 0
let results: Array<StrategyResult> = []
let scenarioName = ""

const showError = (message: string | undefined) => {
  ui.error.hidden = message === undefined
  ui.error.textContent = message ?? ""
}

const start = () => {
  const state = currentState()
  showError(undefined)
  try {
    writeHash(state)
  } catch {
    // Invalid JSON is not written to the URL; the worker reports it with the CLI's message.
  }
  if (state.strategies.length === 0) {
    showError("pick at least one strategy")
    return
  }
  runId += 1
  results = []
  try {
    scenarioName = (JSON.parse(state.json) as { name?: string }).name ?? "scenario"
  } catch {
    scenarioName = "scenario"
  }
  drawOutput(scenarioName, results)
  document.body.dataset.state = "running"
  ui.run.disabled = true
  ui.status.textContent = "starting…"
  const request: RunRequest = {
    type: "run",
    id: runId,
    scenarioJson: state.json,
    strategies: state.strategies,
    options: state.options,
    seed: state.seed
  }
  worker.postMessage(request)
}

const finish = (state: "done" | "invalid" | "failed", status: string) => {
  document.body.dataset.state = state
  ui.run.disabled = false
  ui.status.textContent = status
}

worker.onmessage = (event: MessageEvent<WorkerMessage>) => {
  const m = event.data
  if (m.id !== runId) return
  const total = currentState().strategies.length
  switch (m.type) {
    case "progress":
      ui.status.textContent = `[${results.length + 1}/${total}] ${m.strategy}: ${(m.virtualMillis / 1000).toFixed(1)} s virtual…`
      break
    case "result":
      results.push(m.result)
      drawOutput(scenarioName, results, m.result.json.strategy)
      ui.status.textContent = `[${results.length}/${total}] ${m.result.json.strategy}: ${m.result.json.completionSeconds.toFixed(1)} s virtual`
      break
    case "done":
      document.body.dataset.wallMs = m.wallMs.toFixed(0)
      finish("done", `${results.length} strategies in ${(m.wallMs / 1000).toFixed(2)} s wall`)
      break
    case "invalid":
      showError(m.message)
      finish("invalid", "invalid scenario")
      break
    case "failed":
      showError(m.message)
      finish("failed", "failed")
      break
  }
}
worker.onerror = (event) => {
  showError(event.message)
  finish("failed", "worker failed")
}

ui.run.addEventListener("click", start)
window.addEventListener("hashchange", () => applyState(readHash()))

applyState(readHash())
start()

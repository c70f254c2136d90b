/**
 * Line charts as plain SVG: the demo's charts (attempts, goodput, concurrency limit per
 * strategy) without a charting runtime, so the page stays small.
 */
import type { Series } from "@sluice/simulation"

export interface Line {
  readonly strategy: string
  readonly color: string
  readonly points: ReadonlyArray<Series.Point>
}

export interface ChartOptions {
  readonly title: string
  readonly yTitle: string
  readonly log?: boolean
  readonly step?: boolean
  /** The strategy whose line was just added: it is drawn in, as its run went, left to right. */
  readonly fresh?: string
}

const W = 640
const H = 260
const M = { left: 56, right: 12, top: 28, bottom: 36 }
const SVG_NS = "http://www.w3.org/2000/svg"

const niceStep = (span: number, ticks: number) => {
  const raw = span / ticks
  const mag = 10 ** Math.floor(Math.log10(raw))
  const norm = raw / mag
  return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag
}

const fmt = (v: number) =>
  Math.abs(v) >= 10_000
    ? `${Math.round(v / 1000)}k`
    : Math.abs(v) >= 1000
      ? `${(v / 1000).toFixed(1)}k`
      : `${+v.toFixed(2)}`

const el = (name: string, attrs: Record<string, string | number>, text?: string) => {
  const node = document.createElementNS(SVG_NS, name)
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v))
  if (text !== undefined) node.textContent = text
  return node
}

/** Draws `lines` into a fresh SVG element; an empty chart still shows its frame and title. */
export const drawChart = (options: ChartOptions, lines: ReadonlyArray<Line>): SVGSVGElement => {
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img" }) as SVGSVGElement
  svg.append(el("text", { x: M.left, y: 18, class: "title" }, options.title))
  const shown = lines.map((l) => ({
    ...l,
    points: options.log ? l.points.filter((p) => p.value > 0) : l.points
  }))
  const all = shown.flatMap((l) => l.points)
  const xMax = Math.max(1, ...all.map((p) => p.t))
  const yMaxRaw = Math.max(options.log ? 10 : 1, ...all.map((p) => p.value))
  const yMinLog = 1
  const plotW = W - M.left - M.right
  const plotH = H - M.top - M.bottom
  const xOf = (t: number) => M.left + (t / xMax) * plotW
  let yOf: (v: number) => number
  const yTicks: Array<number> = []
  if (options.log) {
    const top = 10 ** Math.ceil(Math.log10(yMaxRaw))
    const span = Math.log10(top) - Math.log10(yMinLog)
    yOf = (v) => M.top + plotH - ((Math.log10(Math.max(v, yMinLog)) - Math.log10(yMinLog)) / span) * plotH
    for (let v = yMinLog; v <= top; v *= 10) yTicks.push(v)
  } else {
    const step = niceStep(yMaxRaw, 5)
    const top = Math.ceil(yMaxRaw / step) * step
    yOf = (v) => M.top + plotH - (v / top) * plotH
    for (let v = 0; v <= top + step / 2; v += step) yTicks.push(v)
  }
  const grid = el("g", { class: "grid" })
  for (const v of yTicks) {
    const y = yOf(v)
    grid.append(el("line", { x1: M.left, x2: W - M.right, y1: y, y2: y }))
    grid.append(el("text", { x: M.left - 6, y: y + 4, class: "tick", "text-anchor": "end" }, fmt(v)))
  }
  const xStep = niceStep(xMax, 8)
  for (let t = 0; t <= xMax + 1e-9; t += xStep) {
    const x = xOf(t)
    grid.append(el("line", { x1: x, x2: x, y1: M.top, y2: H - M.bottom }))
    grid.append(el("text", { x, y: H - M.bottom + 16, class: "tick", "text-anchor": "middle" }, fmt(t)))
  }
  svg.append(grid)
  svg.append(
    el(
      "text",
      { x: M.left + plotW / 2, y: H - 4, class: "axis", "text-anchor": "middle" },
      "virtual time (s)"
    )
  )
  svg.append(
    el(
      "text",
      {
        x: 12,
        y: M.top + plotH / 2,
        class: "axis",
        "text-anchor": "middle",
        transform: `rotate(-90 12 ${M.top + plotH / 2})`
      },
      options.yTitle
    )
  )
  for (const line of shown) {
    if (line.points.length === 0) continue
    let d = ""
    let prevY: number | undefined
    for (const [i, p] of line.points.entries()) {
      const x = xOf(p.t).toFixed(1)
      const y = yOf(p.value).toFixed(1)
      if (i === 0) d += `M${x},${y}`
      else if (options.step && prevY !== undefined) d += `H${x}V${y}`
      else d += `L${x},${y}`
      prevY = Number(y)
    }
    const path = el("path", {
      d,
      stroke: line.color,
      class: line.strategy === options.fresh ? "line fresh" : "line",
      pathLength: 1
    })
    path.append(el("title", {}, line.strategy))
    svg.append(path)
  }
  return svg
}

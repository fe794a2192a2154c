/**
 * `--beside <peer>`: our runs of rows 1 to 5 set beside a peer framework's from the same sitting, and
 * issue #44's targets judged on them. Pure: no I/O.
 */
import { type Cells, formatNumber, medianOfRuns, type RowId, type RowResult, ROWS } from "./table.js"

/** One pair of the sitting: each side's results from one fresh run of the selected rows. */
export interface BesidePair {
  readonly ours: ReadonlyArray<RowResult>
  readonly peer: ReadonlyArray<RowResult>
}

export interface BesideRule {
  readonly id: RowId
  /** The target in issue #44's words. */
  readonly target: string
  /** Our measure (a cell of our row); the peer's same cell is shown beside it. */
  readonly cell: string
  /** What ours is held to: `factor` × a cell of our own run (row 1's minimal app) or of the peer's. */
  readonly bar: { readonly side: "ours" | "peer"; readonly cell: string; readonly factor: number }
  /** Met when ours ≥ the bar (higher is better) or ours ≤ the bar (lower is better). */
  readonly higherIsBetter: boolean
  readonly unit: "req/s" | "added ms"
  /** The baselines each run measured beside (the minimal app, the fake model called directly). */
  readonly baselines: ReadonlyArray<{ readonly label: string; readonly cell: string; readonly unit: "req/s" | "ms" }>
}

export const BESIDE_RULES: ReadonlyArray<BesideRule> = [
  {
    id: "1",
    target: "GET /agents: ours ≥ 0.9 × minimal, the peer's rate beside",
    cell: "ours",
    bar: { side: "ours", cell: "minimal", factor: 0.9 },
    higherIsBetter: true,
    unit: "req/s",
    baselines: [{ label: "minimal", cell: "minimal", unit: "req/s" }, { label: "raw", cell: "raw", unit: "req/s" }]
  },
  {
    id: "2",
    target: "/text added p50 ≤ the peer's",
    cell: "addedP50",
    bar: { side: "peer", cell: "addedP50", factor: 1 },
    higherIsBetter: false,
    unit: "added ms",
    baselines: [{ label: "fake p50", cell: "fakeP50", unit: "ms" }]
  },
  {
    id: "3",
    target: "/text req/s at 50 connections ≥ 1.5 × the peer's",
    cell: "ours",
    bar: { side: "peer", cell: "ours", factor: 1.5 },
    higherIsBetter: true,
    unit: "req/s",
    baselines: [{ label: "fake", cell: "fake", unit: "req/s" }]
  },
  {
    id: "4",
    target: "first text-delta added ≤ the peer's",
    cell: "added",
    bar: { side: "peer", cell: "added", factor: 1 },
    higherIsBetter: false,
    unit: "added ms",
    baselines: [{ label: "fake", cell: "fake", unit: "ms" }]
  },
  {
    id: "5",
    target: "pipeline req/s ≥ 0.9 × the peer's",
    cell: "ours",
    bar: { side: "peer", cell: "ours", factor: 0.9 },
    higherIsBetter: true,
    unit: "req/s",
    baselines: []
  }
]

const finite = (value: number | undefined): value is number => value !== undefined && Number.isFinite(value)

export interface Judgement {
  readonly ours: number | undefined
  readonly peer: number | undefined
  /** The value ours is held to; undefined when the cell it comes from is missing. */
  readonly bar: number | undefined
  /** Undefined when ours or the bar is missing (a row failed). */
  readonly met: boolean | undefined
}

/** One rule on one pair of rows' cells (or on the medians of several). */
export const judge = (rule: BesideRule, ours: Cells | undefined, peer: Cells | undefined): Judgement => {
  const oursValue = ours?.[rule.cell]
  const barBase = (rule.bar.side === "ours" ? ours : peer)?.[rule.bar.cell]
  const bar = finite(barBase) ? rule.bar.factor * barBase : undefined
  const met = finite(oursValue) && bar !== undefined
    ? rule.higherIsBetter ? oursValue >= bar : oursValue <= bar
    : undefined
  return { ours: oursValue, peer: peer?.[rule.cell], bar, met }
}

export interface BesideRow {
  readonly rule: BesideRule
  /** The rule on the median of each cell over the pairs: the row's verdict. */
  readonly median: Judgement
  readonly pairs: ReadonlyArray<Judgement>
  /** Each baseline's median over the pairs, in our runs and in the peer's. */
  readonly baselines: ReadonlyArray<{ readonly label: string; readonly unit: "req/s" | "ms" } & Sides>
  /** Each side's server's CPU milliseconds per request over the row (median): less moved by a busy machine. */
  readonly cpu: Sides
}

export interface Sides {
  readonly ours: number | undefined
  readonly peer: number | undefined
}

const cellsOf = (results: ReadonlyArray<RowResult>, id: RowId) => results.find((result) => result.id === id)?.cells

/** The rules of the selected rows, each judged on the medians over the pairs and on every pair. */
export const compareBeside = (rows: ReadonlyArray<RowId>, pairs: ReadonlyArray<BesidePair>): Array<BesideRow> => {
  const medians = {
    ours: medianOfRuns(pairs.map((pair) => pair.ours)),
    peer: medianOfRuns(pairs.map((pair) => pair.peer))
  }
  return BESIDE_RULES.filter((rule) => rows.includes(rule.id)).map((rule) => {
    const ours = cellsOf(medians.ours, rule.id)
    const peer = cellsOf(medians.peer, rule.id)
    return {
      rule,
      median: judge(rule, ours, peer),
      pairs: pairs.map((pair) => judge(rule, cellsOf(pair.ours, rule.id), cellsOf(pair.peer, rule.id))),
      baselines: rule.baselines.map(({ cell, label, unit }) => ({
        label,
        unit,
        ours: ours?.[cell],
        peer: peer?.[cell]
      })),
      cpu: { ours: ours?.cpuMsPerRequest, peer: peer?.cpuMsPerRequest }
    }
  })
}

export const verdictOf = (met: boolean | undefined): string => met === undefined ? "no result" : met ? "met" : "NOT met"

const show = (value: number | undefined, unit: BesideRule["unit"] | "ms") => {
  if (!finite(value)) return "–"
  if (unit === "req/s") return `${formatNumber(value)}/s`
  return `${unit === "added ms" && value >= 0 ? "+" : ""}${formatNumber(value, 2)} ms`
}

/**
 * The comparison as Markdown: per rule ours, the peer's, the bar, the baselines, each side's CPU per
 * request, pairs met and the verdict.
 */
export const formatBeside = (rows: ReadonlyArray<BesideRow>, peerName: string): string => {
  const sides = `our run / ${peerName}'s`
  const lines = [
    `| # | target (issue #44) | ours | ${peerName} | bar | baselines, ${sides} | CPU per request, ${sides} | pairs met | |`,
    "|---|---|---|---|---|---|---|---|---|"
  ]
  for (const row of rows) {
    const { median, rule } = row
    const baselines = row.baselines.map((baseline) =>
      `${baseline.label} ${show(baseline.ours, baseline.unit)} / ${show(baseline.peer, baseline.unit)}`
    ).join("; ")
    const met = row.pairs.filter((pair) => pair.met === true).length
    const cells = [
      rule.id,
      rule.target,
      show(median.ours, rule.unit),
      show(median.peer, rule.unit),
      `${rule.higherIsBetter ? "≥" : "≤"} ${show(median.bar, rule.unit)}`,
      baselines === "" ? "–" : baselines,
      `${show(row.cpu.ours, "ms")} / ${show(row.cpu.peer, "ms")}`,
      `${met} of ${row.pairs.length}`,
      verdictOf(median.met)
    ]
    lines.push(`| ${cells.join(" | ")} |`)
  }
  return lines.join("\n")
}

/**
 * A peer's results as Markdown: each row's measure and result, "ours" in them read as the peer, and row 5
 * not called durable (a peer keeps its executions as its defaults do). No target column: the bench's
 * targets (issue #10) are our service's own.
 */
export const formatPeerTable = (results: ReadonlyArray<RowResult>, peerName: string): string => {
  const asPeer = (text: string) => text.replaceAll("ours", peerName)
  const lines = ["| # | measure | result |", "|---|---|---|"]
  for (const result of results) {
    const title = ROWS[result.id].title.replace(", durable)", ")")
    lines.push(`| ${result.id} | ${title} | ${asPeer(ROWS[result.id].show(result.cells))} |`)
  }
  const notes = results.flatMap((result) => result.notes.map((note) => `- row ${result.id}: ${asPeer(note)}`))
  return [...lines, ...(notes.length > 0 ? ["", ...notes] : [])].join("\n")
}

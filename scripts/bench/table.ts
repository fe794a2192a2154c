/**
 * The bench's rows as data: what each row measured (named numeric cells), its target, and the table
 * printed from them. Pure: no I/O, so it can be tested and used on runs read back from JSON.
 */

/** One row's measurements in one run: named numbers (milliseconds, requests per second, bytes, ratios). */
export type Cells = Readonly<Record<string, number>>

export interface RowResult {
  readonly id: RowId
  readonly cells: Cells
  /** What a reader must know about this measurement (errors, a partial count). */
  readonly notes: ReadonlyArray<string>
}

export const ROW_IDS = ["1", "2", "3", "4", "5", "6", "7a", "7b", "7c", "8", "9", "10", "11", "12"] as const
export type RowId = (typeof ROW_IDS)[number]

interface RowSpec {
  readonly title: string
  readonly target: string
  readonly show: (cells: Cells) => string
  /**
   * Undefined when a cell it needs is missing (the row failed); "reported" for a row with no numeric
   * target, whose number is only set beside another.
   */
  readonly met: (cells: Cells) => boolean | "reported" | undefined
  /** The cell `--against` compares with the reference build, and which way is better. */
  readonly compare: Compare
}

export interface Compare {
  readonly cell: string
  readonly higherIsBetter: boolean
}

const MB = 1024 * 1024

const has = (cells: Cells, ...keys: ReadonlyArray<string>) => keys.every((key) => Number.isFinite(cells[key]))

const when = (
  cells: Cells,
  keys: ReadonlyArray<string>,
  check: () => boolean
) => (has(cells, ...keys) ? check() : undefined)

export const formatNumber = (value: number | undefined, digits = 0): string =>
  value === undefined || !Number.isFinite(value)
    ? "–"
    : value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })

const ms = (value: number | undefined) => `${formatNumber(value, 2)} ms`
const signedMs = (value: number | undefined) =>
  value === undefined || !Number.isFinite(value) ? "–" : `${value >= 0 ? "+" : ""}${formatNumber(value, 2)} ms`
const megabytes = (bytes: number | undefined) => (bytes === undefined ? "–" : `${formatNumber(bytes / MB)} MB`)

/**
 * Row 12's agents (scripts/bench/feature-app.ts): `plain` and, after it, one feature each; `threeTools` is
 * `approving`'s control (its third tool without approval).
 */
export const FEATURE_AGENTS = ["plain", "guarded", "hooked", "approving", "threeTools", "working", "fallback"] as const
export type FeatureAgent = (typeof FEATURE_AGENTS)[number]
const FEATURES = FEATURE_AGENTS.filter((agent) => agent !== "plain")

/** How much more CPU per request than plain's, as a signed percentage. */
const cpuOverPlain = (c: Cells, agent: FeatureAgent) => {
  const ratio = c[`${agent}CpuMs`] / c.plainCpuMs - 1
  return Number.isFinite(ratio) ? `${ratio >= 0 ? "+" : ""}${formatNumber(ratio * 100)}%` : "–"
}

const memoryRow = (title: string, counted: string): RowSpec => ({
  title,
  target: "peak ≤ 1 GB; after ≤ 1.1 × idle",
  show: (c) =>
    `${formatNumber(c.count)} ${counted}; idle ${megabytes(c.idle)}, peak ${megabytes(c.peak)}, after ${
      megabytes(c.after)
    }` +
    ` (after/idle ${formatNumber(c.afterOverIdle, 2)})`,
  met: (c) => when(c, ["peak", "afterOverIdle"], () => c.peak <= 1024 * MB && c.afterOverIdle <= 1.1),
  compare: { cell: "peak", higherIsBetter: false }
})

export const ROWS: Readonly<Record<RowId, RowSpec>> = {
  "1": {
    title: "GET /agents req/s (50 connections)",
    target: "ours ≥ 0.8 × minimal",
    show: (c) =>
      `raw ${formatNumber(c.raw)}, minimal ${formatNumber(c.minimal)}, ours ${formatNumber(c.ours)}; ` +
      `minimal/raw ${formatNumber(c.minimalOverRaw, 3)}, ours/raw ${formatNumber(c.oursOverRaw, 3)}, ` +
      `ours/minimal ${formatNumber(c.oursOverMinimal, 2)}`,
    met: (c) => when(c, ["oursOverMinimal"], () => c.oursOverMinimal >= 0.8),
    compare: { cell: "oursOverMinimal", higherIsBetter: true }
  },
  "2": {
    title: "POST /agents/:id/text added latency over the fake, 1 connection, p50 / p99",
    target: "≤ +1.5 / ≤ +5 ms",
    show: (c) =>
      `${signedMs(c.addedP50)} / ${signedMs(c.addedP99)} (ours ${ms(c.oursP50)} / ${ms(c.oursP99)}, ` +
      `fake ${ms(c.fakeP50)} / ${ms(c.fakeP99)})`,
    met: (c) => when(c, ["addedP50", "addedP99"], () => c.addedP50 <= 1.5 && c.addedP99 <= 5),
    // The added time can be near zero or below it, so no ratio of it means much; the absolute time does.
    compare: { cell: "oursP50", higherIsBetter: false }
  },
  "3": {
    title: "POST /agents/:id/text req/s ÷ the fake's req/s (50 connections)",
    target: "≥ 0.03 (2 × the peer's 0.015)",
    show: (c) => `${formatNumber(c.ratio, 4)} (ours ${formatNumber(c.ours)}/s, fake ${formatNumber(c.fake)}/s)`,
    met: (c) => when(c, ["ratio"], () => c.ratio >= 0.03),
    compare: { cell: "ratio", higherIsBetter: true }
  },
  "4": {
    title: "/agents/:id/stream first text-delta added over the fake's, median",
    target: "≤ +1.5 ms",
    show: (c) => `${signedMs(c.added)} (ours ${ms(c.ours)}, fake ${ms(c.fake)})`,
    met: (c) => when(c, ["added"], () => c.added <= 1.5),
    // As row 2: the absolute time, not the added one.
    compare: { cell: "ours", higherIsBetter: false }
  },
  "5": {
    title: "POST /workflows/pipeline/execute req/s (50 connections, durable)",
    target: "≥ 452/s (2 × the peer's 226/s)",
    show: (c) => `${formatNumber(c.ours)}/s`,
    met: (c) => when(c, ["ours"], () => c.ours >= 452),
    compare: { cell: "ours", higherIsBetter: true }
  },
  "6": {
    title: "GET /workflows/executions, a filtered page of 50 at offset 0 and at the last page, p99",
    target: "p99 ≤ 20 ms at any depth",
    show: (c) =>
      `offset 0: ${ms(c.p99Start)}; offset ${formatNumber(c.deepOffset)}: ${ms(c.p99Deep)} ` +
      `(p50 ${formatNumber(c.p50Start, 2)} / ${formatNumber(c.p50Deep, 2)} ms; ${formatNumber(c.stored)} stored)`,
    met: (c) => when(c, ["p99Start", "p99Deep"], () => c.p99Start <= 20 && c.p99Deep <= 20),
    compare: { cell: "p99Deep", higherIsBetter: false }
  },
  "7a": memoryRow("RSS: open re-attach streams of suspended executions", "open"),
  "7b": memoryRow("RSS: open agent streams against a slow fake", "open"),
  "7c": memoryRow("RSS: creating suspended executions", "created"),
  "8": {
    title: "`node dist/main.js` start to the first 200, empty database, median",
    target: "≤ 0.8 s",
    show: (c) =>
      `${formatNumber(c.median / 1000, 3)} s over ${formatNumber(c.count)} starts (min ${
        formatNumber(c.min / 1000, 3)
      }, max ${formatNumber(c.max / 1000, 3)})`,
    met: (c) => when(c, ["median"], () => c.median <= 800),
    compare: { cell: "median", higherIsBetter: false }
  },
  "9": {
    title: "POST /workflows/pipeline/execute req/s on Postgres, one instance and three (50 connections in all)",
    target: "report",
    show: (c) =>
      `one ${formatNumber(c.one)}/s, three ${formatNumber(c.three)}/s ` +
      `(${formatNumber(c.threeA)} + ${formatNumber(c.threeB)} + ${formatNumber(c.threeC)}); ` +
      `three/one ${formatNumber(c.threeOverOne, 2)}; errors ${formatNumber(c.errorsOne)} / ${
        formatNumber(c.errorsThree)
      }`,
    met: (c) => (has(c, "one", "three", "threeOverOne") ? "reported" : undefined),
    compare: { cell: "one", higherIsBetter: true }
  },
  "10": {
    title:
      "`reminder` executions asleep at once (wakes spread over 60 s): RSS, wake lateness p50 / p99, without and with a restart",
    target: "parked ≤ 1.1 × idle; p99 ≤ 100 ms",
    show: (c) =>
      `${formatNumber(c.count)} parked; idle ${megabytes(c.idle)}, parked ${megabytes(c.parked)} (${
        formatNumber(c.parkedOverIdle, 2)
      }); ` +
      `lateness ${ms(c.p50)} / ${ms(c.p99)}, after a restart ${ms(c.restartP50)} / ${ms(c.restartP99)}`,
    met: (c) =>
      when(
        c,
        ["parkedOverIdle", "p99", "restartP99"],
        () => c.parkedOverIdle <= 1.1 && c.p99 <= 100 && c.restartP99 <= 100
      ),
    compare: { cell: "p99", higherIsBetter: false }
  },
  "11": {
    title: "`batch`: a 1,000-item andForEach at concurrency 16, items/s on SQLite and Postgres; per item on Postgres",
    target: "report",
    show: (c) =>
      `SQLite ${formatNumber(c.sqlite)}/s, Postgres ${formatNumber(c.postgres)}/s; per item ${
        formatNumber(c.commitsPerItem, 2)
      } commits, ` +
      `${formatNumber(c.writesPerItem, 2)} row writes, ${formatNumber(c.bytesPerItem)} bytes`,
    met: (c) => (has(c, "sqlite", "postgres") ? "reported" : undefined),
    compare: { cell: "sqlite", higherIsBetter: true }
  },
  "12": {
    title:
      "POST /agents/:id/text, the same agent with one feature on, p50 added over plain; CPU per request over plain's",
    target: "each feature alone ≤ +0.3 ms over plain (report)",
    show: (c) =>
      `plain ${ms(c.plainP50)}, CPU ${ms(c.plainCpuMs)}; ` +
      FEATURES.map((agent) => `${agent} ${signedMs(c[`${agent}Added`])} (CPU ${cpuOverPlain(c, agent)})`).join(", "),
    met: (c) => (has(c, "plainP50", ...FEATURES.map((agent) => `${agent}Added`)) ? "reported" : undefined),
    // As row 2: the absolute time; an added time near zero makes no ratio.
    compare: { cell: "plainP50", higherIsBetter: false }
  }
}

export const median = (values: ReadonlyArray<number>): number => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/** The value at quantile `q` (0..1) of the values, nearest rank. */
export const percentile = (values: ReadonlyArray<number>, q: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * q) - 1))]
}

/**
 * One result per row from several runs: each cell is the median of that cell over the runs that
 * measured it (error counts take the largest); notes are kept once each.
 */
export const medianOfRuns = (runs: ReadonlyArray<ReadonlyArray<RowResult>>): Array<RowResult> =>
  ROW_IDS.flatMap((id) => {
    const results = runs.flatMap((run) => run.filter((row) => row.id === id))
    if (results.length === 0) return []
    const keys = [...new Set(results.flatMap((row) => Object.keys(row.cells)))]
    const cells = Object.fromEntries(keys.map((key) => {
      const values = results.map((row) => row.cells[key]).filter((value) => value !== undefined)
      return [key, key.startsWith("errors") ? Math.max(...values) : median(values)]
    }))
    return [{ id, cells, notes: [...new Set(results.flatMap((row) => row.notes))] }]
  })

const verdict = (met: boolean | "reported" | undefined) =>
  met === undefined ? "no result" : met === "reported" ? "reported" : met ? "met" : "NOT met"

/** The table as Markdown: row, what was measured, the target and whether it is met. */
export const formatTable = (results: ReadonlyArray<RowResult>): string => {
  const lines = ["| # | measure | result | target | |", "|---|---|---|---|---|"]
  for (const result of results) {
    const spec = ROWS[result.id]
    lines.push(
      `| ${result.id} | ${spec.title} | ${spec.show(result.cells)} | ${spec.target} | ${
        verdict(spec.met(result.cells))
      } |`
    )
  }
  const notes = results.flatMap((result) => result.notes.map((note) => `- row ${result.id}: ${note}`))
  return [...lines, ...(notes.length > 0 ? ["", ...notes] : [])].join("\n")
}

/** The rows `--only` selects: "7" means 7a, 7b and 7c. */
export const selectRows = (only: string | undefined): ReadonlyArray<RowId> => {
  if (only === undefined || only.trim() === "") return ROW_IDS
  const wanted = only.split(",").map((part) => part.trim()).filter((part) => part !== "")
  // "7" is 7a, 7b and 7c; "1" is row 1 only, not 10 or 11.
  const selects = (part: string, id: RowId) =>
    id === part || (id.startsWith(part) && /^[a-z]$/.test(id.slice(part.length)))
  const unknown = wanted.filter((part) => !ROW_IDS.some((id) => selects(part, id)))
  if (unknown.length > 0) throw new Error(`--only: unknown row ${unknown.join(", ")} (rows: ${ROW_IDS.join(", ")})`)
  return ROW_IDS.filter((id) => wanted.some((part) => selects(part, id)))
}

/**
 * `--against`: the working tree's runs set beside the reference build's, pair by pair, and the rule a
 * row must pass (the median of its pair ratios at least 0.95, none below 0.90). Pure: no I/O.
 */
import { type Compare, formatNumber, median, type RowId, type RowResult, ROWS } from "./table.js"

export const PASS_MEDIAN = 0.95
export const PAIR_FLOOR = 0.9

/** One sitting's pair: each side's results from one fresh run of the selected rows. */
export interface Pair {
  readonly ref: ReadonlyArray<RowResult>
  readonly head: ReadonlyArray<RowResult>
}

export interface PairComparison {
  readonly ref: number | undefined
  readonly head: number | undefined
  /** Above 1 when the working tree did better; undefined when either side has no usable value. */
  readonly ratio: number | undefined
}

export type Verdict = "pass" | "BEHIND" | "no result"

export interface RowComparison {
  readonly id: RowId
  readonly cell: string
  readonly higherIsBetter: boolean
  readonly pairs: ReadonlyArray<PairComparison>
  readonly median: number | undefined
  readonly min: number | undefined
  readonly verdict: Verdict
}

const usable = (value: number | undefined): value is number =>
  value !== undefined && Number.isFinite(value) && value > 0

/** head/ref for a higher-is-better cell, ref/head for a lower-is-better one. */
export const orientedRatio = (
  higherIsBetter: boolean,
  ref: number | undefined,
  head: number | undefined
): number | undefined => {
  if (!usable(ref) || !usable(head)) return undefined
  return higherIsBetter ? head / ref : ref / head
}

/** "no result" unless every pair has a ratio. */
export const verdictOf = (ratios: ReadonlyArray<number | undefined>): Verdict => {
  if (ratios.length === 0 || ratios.some((ratio) => ratio === undefined)) return "no result"
  const known = ratios as ReadonlyArray<number>
  return median(known) >= PASS_MEDIAN && Math.min(...known) >= PAIR_FLOOR ? "pass" : "BEHIND"
}

const cellOf = (results: ReadonlyArray<RowResult>, id: RowId, cell: string) =>
  results.find((result) => result.id === id)?.cells[cell]

/** The service's CPU per request, beside a row's own metric where the row measures it (scripts/bench/rows-http.ts). */
export const CPU_PER_REQUEST: Compare = { cell: "cpuMsPerRequest", higherIsBetter: false }

export const compareRow = (
  id: RowId,
  pairs: ReadonlyArray<Pair>,
  compare: Compare = ROWS[id].compare
): RowComparison => {
  const { cell, higherIsBetter } = compare
  const compared = pairs.map((pair): PairComparison => {
    const ref = cellOf(pair.ref, id, cell)
    const head = cellOf(pair.head, id, cell)
    return { ref, head, ratio: orientedRatio(higherIsBetter, ref, head) }
  })
  const ratios = compared.map((pair) => pair.ratio)
  const known = ratios.filter((ratio): ratio is number => ratio !== undefined)
  return {
    id,
    cell,
    higherIsBetter,
    pairs: compared,
    median: known.length > 0 ? median(known) : undefined,
    min: known.length > 0 ? Math.min(...known) : undefined,
    verdict: verdictOf(ratios)
  }
}

export const compareRows = (rows: ReadonlyArray<RowId>, pairs: ReadonlyArray<Pair>): Array<RowComparison> =>
  rows.flatMap((id) => {
    const measuresCpu = pairs.some((pair) => cellOf(pair.head, id, CPU_PER_REQUEST.cell) !== undefined)
    return [compareRow(id, pairs), ...(measuresCpu ? [compareRow(id, pairs, CPU_PER_REQUEST)] : [])]
  })

export const anyBehind = (rows: ReadonlyArray<RowComparison>): boolean => rows.some((row) => row.verdict === "BEHIND")

const value = (number: number | undefined) =>
  number === undefined || !Number.isFinite(number)
    ? "–"
    : formatNumber(number, Math.abs(number) >= 100 ? 0 : Math.abs(number) >= 1 ? 2 : 4)

/** The comparison as Markdown: per row its metric, each pair's ref / head / ratio, the median and the least ratio. */
export const formatComparison = (rows: ReadonlyArray<RowComparison>): string => {
  const pairCount = Math.max(0, ...rows.map((row) => row.pairs.length))
  const pairHeads = Array.from({ length: pairCount }, (_, index) => `pair ${index + 1}: ref / head / ratio`)
  const lines = [
    `| # | metric | ${pairHeads.join(" | ")} | median ratio | min ratio | |`,
    `|---|---|${pairHeads.map(() => "---|").join("")}---|---|---|`
  ]
  for (const row of rows) {
    const pairs = row.pairs.map((pair) => `${value(pair.ref)} / ${value(pair.head)} / ${formatNumber(pair.ratio, 3)}`)
    const metric = `${row.cell} (${row.higherIsBetter ? "higher" : "lower"} is better)`
    lines.push(
      `| ${row.id} | ${metric} | ${pairs.join(" | ")} | ${formatNumber(row.median, 3)} | ${
        formatNumber(row.min, 3)
      } | ${row.verdict} |`
    )
  }
  return lines.join("\n")
}

/** The reference commit named by a `bench-reference: <sha>` line (docs/benchmarks.md). */
export const readReference = (text: string): string | undefined =>
  /^bench-reference:\s*([0-9a-f]{7,40})\s*$/m.exec(text)?.[1]

/** Which side runs first in pair `pair` (from 1): the reference in odd pairs, the working tree in even ones. */
export const pairOrder = (pair: number): readonly ["ref", "head"] | readonly ["head", "ref"] =>
  pair % 2 === 1 ? ["ref", "head"] : ["head", "ref"]

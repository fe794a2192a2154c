import { describe, expect, it } from "vitest"
import {
  anyBehind,
  compareRow,
  compareRows,
  formatComparison,
  orientedRatio,
  type Pair,
  pairOrder,
  readReference,
  verdictOf
} from "../scripts/bench/against.js"
import { ROW_IDS, ROWS } from "../scripts/bench/table.js"

const pair = (id: "1" | "2" | "8", ref: Record<string, number>, head: Record<string, number>): Pair => ({
  ref: [{ id, cells: ref, notes: [] }],
  head: [{ id, cells: head, notes: [] }]
})

describe("bench --against", () => {
  it("orients every ratio so that above 1 means the working tree did better", () => {
    expect(orientedRatio(true, 100, 110)).toBeCloseTo(1.1)
    expect(orientedRatio(false, 10, 8)).toBeCloseTo(1.25)
    expect(orientedRatio(false, 8, 10)).toBeCloseTo(0.8)
    expect(orientedRatio(true, 100, undefined)).toBeUndefined()
    expect(orientedRatio(false, 0, 5)).toBeUndefined()
    expect(orientedRatio(true, Number.NaN, 5)).toBeUndefined()
  })

  it("passes a row whose median ratio is at least 0.95 and no pair below 0.90", () => {
    expect(verdictOf([0.95, 0.92, 1.01])).toBe("pass")
    expect(verdictOf([0.94, 0.96, 0.93])).toBe("BEHIND")
    expect(verdictOf([1.2, 1.1, 0.89])).toBe("BEHIND")
    expect(verdictOf([1, 0.9, 1])).toBe("pass")
    expect(verdictOf([1, undefined, 1])).toBe("no result")
    expect(verdictOf([])).toBe("no result")
  })

  it("compares each row's primary cell, the absolute time for the added latencies", () => {
    expect(ROWS["2"].compare).toEqual({ cell: "oursP50", higherIsBetter: false })
    expect(ROWS["4"].compare).toEqual({ cell: "ours", higherIsBetter: false })
    expect(ROWS["1"].compare).toEqual({ cell: "oursOverMinimal", higherIsBetter: true })
    for (const id of ROW_IDS) expect(ROWS[id].compare.cell).not.toMatch(/^added/)
    const row = compareRow("2", [
      pair("2", { oursP50: 10, addedP50: 1 }, { oursP50: 9 }),
      pair("2", { oursP50: 10 }, { oursP50: 10.5 }),
      pair("2", { oursP50: 10 }, { oursP50: 10 })
    ])
    expect(row.pairs.map((one) => one.ratio)).toEqual([10 / 9, 10 / 10.5, 1])
    expect(row.median).toBe(1)
    expect(row.min).toBeCloseTo(0.952)
    expect(row.verdict).toBe("pass")
  })

  it("adds the service's CPU per request beside the row's metric where the row measured it", () => {
    const pairs = [
      pair("2", { oursP50: 10, cpuMsPerRequest: 1 }, { oursP50: 10, cpuMsPerRequest: 1.25 }),
      pair("2", { oursP50: 10, cpuMsPerRequest: 1 }, { oursP50: 10, cpuMsPerRequest: 1.2 }),
      pair("2", { oursP50: 10, cpuMsPerRequest: 1 }, { oursP50: 10, cpuMsPerRequest: 1.1 })
    ]
    const [latency, cpu] = compareRows(["2"], pairs)
    expect(latency.verdict).toBe("pass")
    expect(cpu.cell).toBe("cpuMsPerRequest")
    expect(cpu.median).toBeCloseTo(1 / 1.2)
    expect(cpu.verdict).toBe("BEHIND")
    expect(compareRows(["8"], [pair("8", { median: 1 }, { median: 1 })])).toHaveLength(1)
  })

  it("gives no result when a pair misses the cell, and is behind only on a BEHIND row", () => {
    const missing = compareRow("8", [
      pair("8", { median: 700 }, { median: 690 }),
      pair("8", { median: 700 }, {}),
      pair("8", { median: 700 }, { median: 710 })
    ])
    expect(missing.verdict).toBe("no result")
    expect(missing.pairs[1]).toEqual({ ref: 700, head: undefined, ratio: undefined })
    const behind = compareRow("1", [
      pair("1", { oursOverMinimal: 0.8 }, { oursOverMinimal: 0.7 }),
      pair("1", { oursOverMinimal: 0.8 }, { oursOverMinimal: 0.8 }),
      pair("1", { oursOverMinimal: 0.8 }, { oursOverMinimal: 0.8 })
    ])
    expect(behind.verdict).toBe("BEHIND")
    expect(anyBehind([missing])).toBe(false)
    expect(anyBehind([missing, behind])).toBe(true)
    const table = formatComparison([missing, behind])
    expect(table.split("\n").find((line) => line.startsWith("| 8 "))).toMatch(/700 \/ – \/ – .*\| no result \|$/)
    expect(table.split("\n").find((line) => line.startsWith("| 1 "))).toMatch(/\| 0\.875 \| BEHIND \|$/)
  })

  it("alternates which side goes first", () => {
    expect([1, 2, 3].map(pairOrder)).toEqual([["ref", "head"], ["head", "ref"], ["ref", "head"]])
  })

  it("reads the reference commit from its line", () => {
    expect(readReference("# Benchmarks\n\nbench-reference: 31515f1\n\nmore")).toBe("31515f1")
    expect(readReference("bench-reference:   abcdef0123456789abcdef0123456789abcdef01  \n")).toBe(
      "abcdef0123456789abcdef0123456789abcdef01"
    )
    expect(readReference("the bench-reference: 31515f1 inside a sentence")).toBeUndefined()
    expect(readReference("bench-reference: main")).toBeUndefined()
    expect(readReference("no line here")).toBeUndefined()
  })
})

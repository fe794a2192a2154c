import { describe, expect, it } from "vitest"
import { printableUrl } from "../scripts/bench/lab.js"
import { featureCells } from "../scripts/bench/rows-features.js"
import { splitConnections } from "../scripts/bench/rows-scale.js"
import { formatTable, median, medianOfRuns, percentile, type RowResult, selectRows } from "../scripts/bench/table.js"

describe("bench table", () => {
  it("takes the median of odd and even counts and ignores missing values", () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([Number.NaN, 5])).toBe(5)
    expect(median([])).toBeNaN()
  })

  it("takes percentiles by nearest rank", () => {
    const values = Array.from({ length: 200 }, (_, index) => index + 1)
    expect(percentile(values, 0.5)).toBe(100)
    expect(percentile(values, 0.99)).toBe(198)
    expect(percentile([7], 0.99)).toBe(7)
  })

  it("gives each cell's median over the runs, error counts their largest, notes once", () => {
    const run = (ours: number, errors: number, notes: Array<string> = []): Array<RowResult> => [
      { id: "5", cells: { ours, errors }, notes }
    ]
    const [row] = medianOfRuns([run(100, 0, ["slow"]), run(300, 2, ["slow"]), run(200, 1)])
    expect(row).toEqual({ id: "5", cells: { ours: 200, errors: 2 }, notes: ["slow"] })
  })

  it("keeps rows in table order and leaves out rows no run measured", () => {
    const runs: Array<Array<RowResult>> = [[
      { id: "8", cells: { median: 700, min: 650, max: 900, count: 10 }, notes: [] },
      { id: "1", cells: { oursOverMinimal: 0.9 }, notes: [] }
    ]]
    expect(medianOfRuns(runs).map((row) => row.id)).toEqual(["1", "8"])
  })

  it("marks each row met, not met, or without a result", () => {
    const table = formatTable([
      { id: "5", cells: { ours: 500 }, notes: [] },
      { id: "8", cells: { median: 900, min: 800, max: 1000, count: 10 }, notes: [] },
      { id: "2", cells: {}, notes: ["failed: no answer"] }
    ])
    const lines = table.split("\n")
    expect(lines.find((line) => line.startsWith("| 5 "))).toMatch(/\| met \|$/)
    expect(lines.find((line) => line.startsWith("| 8 "))).toMatch(/\| NOT met \|$/)
    expect(lines.find((line) => line.startsWith("| 2 "))).toMatch(/\| no result \|$/)
    expect(table).toContain("- row 2: failed: no answer")
  })

  it("checks the memory rows against 1 GB and 1.1 × idle", () => {
    const MB = 1024 * 1024
    const row = (peak: number, after: number): RowResult => ({
      id: "7a",
      cells: { count: 10_000, idle: 200 * MB, peak, after, afterOverIdle: after / (200 * MB) },
      notes: []
    })
    expect(formatTable([row(900 * MB, 215 * MB)])).toMatch(/\| met \|$/m)
    expect(formatTable([row(1100 * MB, 215 * MB)])).toMatch(/\| NOT met \|$/m)
    expect(formatTable([row(900 * MB, 230 * MB)])).toMatch(/\| NOT met \|$/m)
  })

  it("selects rows, 7 meaning all of 7a to 7c, and refuses unknown ones", () => {
    expect(selectRows(undefined)).toHaveLength(14)
    expect(selectRows(undefined)).toContain("9")
    expect(selectRows("1, 7")).toEqual(["1", "7a", "7b", "7c"])
    expect(selectRows("7b,8")).toEqual(["7b", "8"])
    expect(selectRows("5,9")).toEqual(["5", "9"])
    expect(selectRows("1")).toEqual(["1"])
    expect(selectRows("10,11")).toEqual(["10", "11"])
    expect(selectRows("1,12")).toEqual(["1", "12"])
    expect(() => selectRows("13")).toThrow(/unknown row 13/)
    expect(() => selectRows("7d")).toThrow(/unknown row 7d/)
  })

  it("reports row 9's one and three instances and their ratio without a verdict, or no result", () => {
    const cells = {
      one: 150,
      three: 210,
      threeA: 71,
      threeB: 70,
      threeC: 69,
      threeOverOne: 1.4,
      errorsOne: 0,
      errorsThree: 2
    }
    const table = formatTable([{ id: "9", cells, notes: ["2 failed requests with three instances"] }])
    const line = table.split("\n").find((row) => row.startsWith("| 9 "))
    expect(line).toContain("one 150/s, three 210/s (71 + 70 + 69); three/one 1.40; errors 0 / 2")
    expect(line).toMatch(/\| report \| reported \|$/)
    expect(table).toContain("- row 9: 2 failed requests with three instances")
    const failed = formatTable([{ id: "9", cells: {}, notes: ["Postgres does not answer at postgres://x: refused"] }])
    expect(failed).toMatch(/\| 9 .*\| report \| no result \|$/m)
  })

  it("gives row 12 each agent's p50 and CPU, and beside every feature its p50 added over plain's", () => {
    const cells = featureCells([
      { agent: "plain", times: [3, 1, 2], cpuMs: 2 },
      { agent: "hooked", times: [2.5, 2.25, 9], cpuMs: 2.5 },
      { agent: "working", times: [1.5, 1.75, 2], cpuMs: 1.9 }
    ])
    expect(cells).toEqual({
      plainP50: 2,
      plainCpuMs: 2,
      hookedP50: 2.5,
      hookedAdded: 0.5,
      hookedCpuMs: 2.5,
      workingP50: 1.75,
      workingAdded: -0.25,
      workingCpuMs: 1.9
    })
  })

  it("reports row 12 without a verdict once every feature has its added time, else no result", () => {
    const features = ["guarded", "hooked", "approving", "threeTools", "working", "fallback"]
    const cells = Object.fromEntries([
      ["plainP50", 3],
      ["plainCpuMs", 2],
      ...features.flatMap((agent) => [[`${agent}Added`, 0.1], [`${agent}CpuMs`, 2.2]])
    ])
    const line = formatTable([{ id: "12", cells, notes: [] }]).split("\n").find((row) => row.startsWith("| 12 "))
    expect(line).toContain("plain 3.00 ms, CPU 2.00 ms; guarded +0.10 ms (CPU +10%), hooked +0.10 ms (CPU +10%)")
    expect(line).toMatch(/\| reported \|$/)
    const { fallbackAdded: _, ...partial } = cells
    expect(formatTable([{ id: "12", cells: partial, notes: [] }])).toMatch(/\| no result \|$/m)
  })

  it("splits the connections over the instances as evenly as they go", () => {
    expect(splitConnections(50, 3)).toEqual([17, 17, 16])
    expect(splitConnections(50, 1)).toEqual([50])
    expect(splitConnections(3, 3)).toEqual([1, 1, 1])
  })

  it("prints a --postgres URL without its password", () => {
    expect(printableUrl("postgres://bench:s3cret@db.example:5432/postgres")).toBe(
      "postgres://bench:***@db.example:5432/postgres"
    )
    expect(printableUrl("postgres://postgres@127.0.0.1:5432/postgres")).toBe(
      "postgres://postgres@127.0.0.1:5432/postgres"
    )
    expect(printableUrl("not a url")).not.toContain("not a url")
  })
})

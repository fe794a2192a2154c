import { describe, expect, it } from "vitest"
import {
  BESIDE_RULES,
  type BesidePair,
  type BesideRule,
  compareBeside,
  formatBeside,
  formatPeerTable,
  judge
} from "../scripts/bench/beside.js"
import { OURS } from "../scripts/bench/lab.js"
import { PEER_ROWS, peerNamed, VOLTAGENT, voltAgentTextDelta } from "../scripts/bench/peer.js"
import type { RowId, RowResult } from "../scripts/bench/table.js"

const rule = (id: RowId): BesideRule => {
  const found = BESIDE_RULES.find((candidate) => candidate.id === id)
  if (found === undefined) throw new Error(`no rule for row ${id}`)
  return found
}

const row = (id: RowId, cells: Record<string, number>): RowResult => ({ id, cells, notes: [] })

describe("bench --beside: issue #44's targets", () => {
  it("holds each row to the right bar, in the right direction", () => {
    const shape = BESIDE_RULES.map((r) => [r.id, r.cell, r.bar.side, r.bar.cell, r.bar.factor, r.higherIsBetter])
    expect(shape).toEqual([
      ["1", "ours", "ours", "minimal", 0.9, true],
      ["2", "addedP50", "peer", "addedP50", 1, false],
      ["3", "ours", "peer", "ours", 1.5, true],
      ["4", "added", "peer", "added", 1, false],
      ["5", "ours", "peer", "ours", 0.9, true]
    ])
    expect(BESIDE_RULES.map((r) => r.id)).toEqual([...PEER_ROWS])
  })

  it("row 1: ours at least 0.9 × its own run's minimal app, whatever the peer's rate", () => {
    expect(judge(rule("1"), { ours: 9_000, minimal: 10_000 }, { ours: 50_000 })).toEqual({
      ours: 9_000,
      peer: 50_000,
      bar: 9_000,
      met: true
    })
    expect(judge(rule("1"), { ours: 8_999, minimal: 10_000 }, { ours: 1 }).met).toBe(false)
    expect(judge(rule("1"), { ours: 9_000, minimal: 10_000 }, undefined).met).toBe(true)
  })

  it("rows 2 and 4: ours' added time at most the peer's, below zero too", () => {
    expect(judge(rule("2"), { addedP50: 0.5 }, { addedP50: 0.6 }).met).toBe(true)
    expect(judge(rule("2"), { addedP50: 0.6 }, { addedP50: 0.6 }).met).toBe(true)
    expect(judge(rule("2"), { addedP50: 0.7 }, { addedP50: 0.6 }).met).toBe(false)
    expect(judge(rule("4"), { added: -0.1 }, { added: 0.2 }).met).toBe(true)
    expect(judge(rule("4"), { added: 0.1 }, { added: -0.2 }).met).toBe(false)
  })

  it("row 3: ours at least 1.5 × the peer's req/s; row 5: at least 0.9 ×", () => {
    expect(judge(rule("3"), { ours: 300 }, { ours: 200 })).toMatchObject({ bar: 300, met: true })
    expect(judge(rule("3"), { ours: 299 }, { ours: 200 }).met).toBe(false)
    expect(judge(rule("5"), { ours: 900 }, { ours: 1_000 })).toMatchObject({ bar: 900, met: true })
    expect(judge(rule("5"), { ours: 899 }, { ours: 1_000 }).met).toBe(false)
  })

  it("gives no result when either side's cell is missing", () => {
    expect(judge(rule("3"), {}, { ours: 200 }).met).toBeUndefined()
    expect(judge(rule("3"), { ours: 300 }, undefined).met).toBeUndefined()
    expect(judge(rule("5"), { ours: 300 }, { ours: Number.NaN }).met).toBeUndefined()
  })

  it("judges the medians over the pairs and counts the pairs that met the rule", () => {
    const pairs: Array<BesidePair> = [
      {
        ours: [row("3", { ours: 310, fake: 5_000, cpuMsPerRequest: 2 })],
        peer: [row("3", { ours: 200, fake: 5_100 })]
      },
      { ours: [row("3", { ours: 290, fake: 5_000 })], peer: [row("3", { ours: 200, fake: 4_900 })] },
      { ours: [row("3", { ours: 330, fake: 5_200 })], peer: [row("3", { ours: 210, fake: 5_000 })] }
    ]
    const [three, ...others] = compareBeside(["3"], pairs)
    expect(others).toEqual([])
    expect(three.median).toMatchObject({ ours: 310, peer: 200, bar: 300, met: true })
    expect(three.pairs.map((pair) => pair.met)).toEqual([true, false, true])
    expect(three.baselines).toEqual([{ label: "fake", unit: "req/s", ours: 5_000, peer: 5_000 }])
    const text = formatBeside([three], "VoltAgent 2.10.0")
    expect(text).toContain("| 3 | /text req/s at 50 connections ≥ 1.5 × the peer's | 310/s | 200/s | ≥ 300/s |")
    expect(three.cpu).toEqual({ ours: 2, peer: undefined })
    expect(text).toContain("| 2.00 ms / – | 2 of 3 | met |")
  })

  it("prints a failed side as no result", () => {
    const [one] = compareBeside(["1"], [{ ours: [row("1", {})], peer: [row("1", { ours: 100 })] }])
    expect(formatBeside([one], "peer")).toContain("| no result |")
  })

  it("titles the peer's table by the peer", () => {
    const text = formatPeerTable(
      [{ id: "5", cells: { ours: 1_234, errors: 2 }, notes: ["2 failed requests (ours)"] }],
      "VoltAgent"
    )
    expect(text).toContain("1,234/s")
    expect(text).toContain("- row 5: 2 failed requests (VoltAgent)")
    expect(text).not.toContain("ours")
    expect(text).toContain("| 5 | POST /workflows/pipeline/execute req/s (50 connections) | 1,234/s |")
  })
})

describe("bench --peer voltagent", () => {
  it("uses VoltAgent's own routes, the same paths and bodies as ours", () => {
    expect(peerNamed("voltagent")).toBe(VOLTAGENT)
    expect(() => peerNamed("mastra")).toThrow(/unknown peer "mastra"/)
    const { stream, ...rest } = VOLTAGENT.target
    const { name: _name, stream: oursStream, ...oursRest } = OURS
    expect(rest).toEqual(oursRest)
    expect([stream.path, stream.body]).toEqual([oursStream.path, oursStream.body])
  })

  it("finds the first text-delta frame of VoltAgent's stream (as it sent them to curl)", () => {
    const start = `data: {"type":"start","messageId":"m"}\n\n`
    const step = `data: {"type":"start-step","request":{"body":{"messages":[{"role":"user","content":"hi"}]}}}\n\n`
    const textStart = `data: {"type":"text-start","id":"txt-0"}\n\n`
    const delta = `data: {"type":"text-delta","id":"txt-0","text":"You "}\n\n`
    expect(voltAgentTextDelta(start + step + textStart)).toBe(false)
    expect(voltAgentTextDelta(start + step + textStart + delta)).toBe(true)
    expect(voltAgentTextDelta(`data: {"type":"text-delta","id":"txt-0","text":""}\n\n`)).toBe(false)
  })
})

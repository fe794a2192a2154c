import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { CommittedEvent } from "../scripts/support/database.js"
import { checkRecordedStarts, readRecordedStarts, type RecordedStart } from "../scripts/support/recorded.js"
import { Violations } from "../scripts/support/violations.js"

// Issue #31 settled 15: the chaos tool's oracle over the starts its workflows record (scripts/chaos-main.mjs),
// on hand-made starts and committed events: a clean history passes, and each broken promise is named.

const T = 1_800_000_000_000
const start = (path: string, time: number, attempt = 1, process = "p1.jsonl"): RecordedStart => ({
  process,
  executionId: "e1",
  path,
  attempt,
  time
})
const event = (type: string, path: string, time: number, extra: Partial<CommittedEvent> = {}): CommittedEvent => ({
  executionId: "e1",
  type,
  path,
  topLevel: !/[/[]/.test(path),
  time,
  ...extra
})

/** A clean run: a step, a sleep woken on time, two items (one re-run after a kill, in a new process), a retried step, a child step. */
const cleanStarts = [
  start("before", T),
  start("after", T + 1_000),
  start("items[0]", T + 1_010),
  start("items[1]", T + 1_010),
  start("items[1]", T + 3_000, 1, "p2.jsonl"),
  start("flaky", T + 3_100),
  start("flaky", T + 3_500, 2, "p2.jsonl"),
  start("child/load", T + 3_600, 1, "p2.jsonl"),
  start("child/store", T + 4_000, 1, "p2.jsonl")
]
const cleanEvents = [
  event("step-complete", "before", T + 10),
  event("step-sleep", "nap", T + 20, { wakeAt: T + 1_000 }),
  event("step-complete", "nap", T + 1_000),
  event("step-complete", "after", T + 1_005),
  event("step-complete", "items[0]", T + 1_020),
  event("step-complete", "items[1]", T + 3_010),
  event("step-complete", "items", T + 3_020),
  event("step-retry", "flaky", T + 3_110, { attempt: 1 }),
  event("step-complete", "flaky", T + 3_510),
  event("step-complete", "child/load", T + 3_610),
  // The child's sleep: it parks the execution, records no start, and is committed when it wakes.
  event("step-sleep", "child/pause", T + 3_620, { wakeAt: T + 4_000 }),
  event("step-complete", "child/pause", T + 4_000),
  event("step-complete", "child", T + 4_010)
]

const kinds = (starts: ReadonlyArray<RecordedStart>, events: ReadonlyArray<CommittedEvent>, skewMs = 0) => {
  const violations = new Violations()
  expect(checkRecordedStarts(starts, events, skewMs, violations).starts).toBe(starts.length)
  return violations.summary().map(({ kind, count }) => [kind, count])
}

describe("chaos oracle (recorded starts against committed events)", () => {
  it("a child's step started while its sleep parks the execution (after the step-sleep, before wakeAt)", () => {
    const early = cleanStarts.map((one) => (one.path === "child/store" ? { ...one, time: T + 3_700 } : one))
    expect(kinds(early, cleanEvents)).toEqual([["a step started before its sleep's wakeAt", 1]])
  })

  it("a clean history has no violation", () => {
    expect(kinds(cleanStarts, cleanEvents)).toEqual([])
  })

  it("a start after its path's commit, or after the commit of the top-level step it is in", () => {
    expect(kinds([...cleanStarts, start("items[0]", T + 1_021, 1, "p2.jsonl")], cleanEvents)).toEqual([[
      "a step started after its commit",
      1
    ]])
    // child/store has no event of its own: the child step's step-complete commits it.
    expect(kinds([...cleanStarts, start("child/store", T + 4_011, 1, "p3.jsonl")], cleanEvents)).toEqual([[
      "a step started after its commit",
      1
    ]])
  })

  it("an attempt whose failure was committed as a step-retry starts again", () => {
    expect(kinds([...cleanStarts, start("flaky", T + 3_200, 1, "p2.jsonl")], cleanEvents)).toEqual([[
      "an attempt started after its failure was committed",
      1
    ]])
  })

  it("a start after a committed sleep and before its wakeAt (less the clock skew allowed)", () => {
    const early = [...cleanStarts, start("after", T + 990, 1, "p0.jsonl")]
    expect(kinds(early, cleanEvents)).toEqual([["a step started before its sleep's wakeAt", 1]])
    expect(kinds(early, cleanEvents, 20)).toEqual([])
  })

  it("a step started twice in one process (a second continuation of a sleep)", () => {
    expect(kinds([...cleanStarts, start("after", T + 1_001)], cleanEvents)).toEqual([[
      "a step started twice in one process",
      1
    ]])
  })

  it("a committed inner step that no start was recorded for", () => {
    expect(kinds(cleanStarts.filter((s) => s.path !== "items[0]"), cleanEvents)).toEqual([[
      "a committed step has no recorded start",
      1
    ]])
  })

  it("reads the per-process files; a line that is not a start is a violation", () => {
    const dir = mkdtempSync(join(tmpdir(), "chaos-oracle-"))
    try {
      writeFileSync(
        join(dir, "1-1.jsonl"),
        `${JSON.stringify({ executionId: "e1", path: "before", attempt: 1, time: T })}\n{"executionId":\n`
      )
      writeFileSync(
        join(dir, "2-1.jsonl"),
        `${JSON.stringify({ executionId: "e1", path: "after", attempt: 1, time: T + 1 })}\n`
      )
      const violations = new Violations()
      const starts = readRecordedStarts(dir, violations)
      expect(starts.map((s) => [s.process, s.path])).toEqual([["1-1.jsonl", "before"], ["2-1.jsonl", "after"]])
      expect(violations.summary().map(({ kind }) => kind)).toEqual(["a recorded start is unreadable"])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

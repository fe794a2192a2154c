/**
 * The oracle of issue #31 (settled 15): the chaos workflows (scripts/chaos-main.mjs) append every
 * start of a step, item, iteration, branch, attempt or child step, (executionId, path, attempt, time),
 * to a file per process, outside the engine's store; these starts are checked against the events the
 * engine committed. Times are one machine's clock: the recording process's and the event timestamps
 * the engine's processes wrote (before their commit, so a start after a commit is also after them).
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { CommittedEvent } from "./database.js"
import type { Violations } from "./violations.js"

/** The workflows whose steps record their starts. */
export const RECORDED_WORKFLOWS = ["chaos-flow", "chaos-child", "chaos-tick", "chaos-queue"] as const

export interface RecordedStart {
  /** The file it was read from: one per process. */
  readonly process: string
  readonly executionId: string
  readonly path: string
  readonly attempt: number
  readonly time: number
}

const isStart = (value: unknown): value is Omit<RecordedStart, "process"> => {
  if (typeof value !== "object" || value === null) return false
  const { executionId, path, attempt, time } = value as Record<string, unknown>
  return typeof executionId === "string" && typeof path === "string" && typeof attempt === "number" &&
    typeof time === "number"
}

/** Every start recorded under `dir`; a line that is not one is a violation (a write is never torn by a kill). */
export const readRecordedStarts = (dir: string, violations: Violations): Array<RecordedStart> =>
  readdirSync(dir).filter((name) => name.endsWith(".jsonl")).sort().flatMap((name) =>
    readFileSync(join(dir, name), "utf8").split("\n").filter((line) => line !== "").flatMap((line) => {
      let parsed: unknown
      try {
        parsed = JSON.parse(line)
      } catch {
        parsed = undefined
      }
      if (isStart(parsed)) return [{ process: name, ...parsed }]
      violations.add("a recorded start is unreadable", `${name}: ${line}`)
      return []
    })
  )

/** The top-level step a path is in: `items[3]` → `items`, `child/load` → `child`. */
const rootOf = (path: string) => path.split(/[/[]/)[0]

const iso = (time: number) => new Date(time).toISOString()

/**
 * Per recorded start: none after its path was committed (its own step-complete, or that of the
 * top-level step it is in); none of an attempt whose failure was committed as a step-retry; none after a
 * step-sleep (top-level or in a child: either parks the execution) was committed and before its wakeAt (less `skewMs`: the database's clock decides
 * due-ness on Postgres); and none twice in one process (a second continuation of a sleep, or work run
 * again without a crash). Every committed inner step has a start recorded. Answers how many starts, of
 * how many executions, were checked.
 */
export const checkRecordedStarts = (
  starts: ReadonlyArray<RecordedStart>,
  events: ReadonlyArray<CommittedEvent>,
  skewMs: number,
  violations: Violations
): { readonly starts: number; readonly executions: number } => {
  const byExecution = new Map<string, Array<CommittedEvent>>()
  for (const event of events) {
    const own = byExecution.get(event.executionId)
    if (own) own.push(event)
    else byExecution.set(event.executionId, [event])
  }
  const seen = new Map<string, number>()
  for (const start of starts) {
    const where = `${start.executionId} ${start.path} attempt ${start.attempt} started at ${iso(start.time)}`
    const own = byExecution.get(start.executionId) ?? []
    const commit = own.filter((event) =>
      event.type === "step-complete" &&
      (event.path === start.path || (event.topLevel && event.path === rootOf(start.path)))
    ).reduce((first, event) => Math.min(first, event.time), Infinity)
    if (start.time > commit) violations.add("a step started after its commit", `${where}, committed at ${iso(commit)}`)
    const retried = own.find((event) =>
      event.type === "step-retry" && event.path === start.path && (event.attempt ?? 0) >= start.attempt &&
      start.time > event.time
    )
    if (retried) {
      violations.add(
        "an attempt started after its failure was committed",
        `${where}; step-retry of attempt ${retried.attempt} at ${iso(retried.time)}`
      )
    }
    const early = own.find((event) =>
      event.type === "step-sleep" && event.wakeAt !== undefined && start.time > event.time &&
      start.time < event.wakeAt - skewMs
    )
    if (early?.wakeAt !== undefined) {
      violations.add(
        "a step started before its sleep's wakeAt",
        `${where}; ${early.path} slept at ${iso(early.time)} until ${iso(early.wakeAt)}`
      )
    }
    const key = `${start.process} ${start.executionId} ${start.path} ${start.attempt}`
    seen.set(key, (seen.get(key) ?? 0) + 1)
    if (seen.get(key) === 2) violations.add("a step started twice in one process", `${where} (${start.process})`)
  }
  const recorded = new Set(starts.map((start) => `${start.executionId} ${start.path}`))
  // A sleep records no start: a child's sleep is committed with its step-sleep before its step-complete.
  for (const event of events) if (event.type === "step-sleep") recorded.add(`${event.executionId} ${event.path}`)
  for (const event of events) {
    if (event.type === "step-complete" && !event.topLevel && !recorded.has(`${event.executionId} ${event.path}`)) {
      violations.add(
        "a committed step has no recorded start",
        `${event.executionId} ${event.path} committed at ${iso(event.time)}`
      )
    }
  }
  return { starts: starts.length, executions: new Set(starts.map((start) => start.executionId)).size }
}

/**
 * The invariants after a chaos run, read over HTTP and, for the event rows themselves, from the database:
 * no execution lost, none left running once recovery settled (parked ones by their last wakeAt), every
 * suspended one resumable to completion, per execution event seqs 1..n without duplicates (stored; a
 * listing's top-level ones rising), no event after a final one, a final status that agrees with the last
 * event, and the recorded steps' starts against the committed events (./recorded.ts).
 */
import { readStepEvents, readStoredRows } from "./database.js"
import type { Instances } from "./instances.js"
import { checkRecordedStarts, readRecordedStarts, RECORDED_WORKFLOWS } from "./recorded.js"
import { sleep } from "./service.js"
import type { Violations } from "./violations.js"

const FINAL_EVENT_OF: Record<string, string> = {
  completed: "workflow-complete",
  error: "workflow-error",
  cancelled: "workflow-cancelled"
}
const FINAL_EVENTS = new Set(Object.values(FINAL_EVENT_OF))
const PAGE = 500
const SETTLE_MS = 90_000
/** How long a parked execution may stay parked past its wakeAt before its timer counts as lost. */
const WAKE_GRACE_MS = 30_000

export interface Listed {
  readonly id: string
  readonly workflowId: string
  readonly status: string
  readonly input?: unknown
  /** A parked execution's wakeAt. */
  readonly waitingUntil?: string
  readonly events: ReadonlyArray<
    {
      readonly id: string
      readonly type: string
      readonly from: string
      readonly startTime: string
      readonly wakeAt?: string
    }
  >
}

/** Issue #31: a sleep's step completes once, and never before its wakeAt (`skewMs`: the database's clock against the process's). */
const sleepProblem = (execution: Listed, skewMs: number): string | undefined => {
  for (const sleep of execution.events.filter((event) => event.type === "step-sleep")) {
    const completions = execution.events.filter((event) => event.type === "step-complete" && event.from === sleep.from)
    if (completions.length > 1) return `sleep ${sleep.from} completed ${completions.length} times`
    const woke = completions[0]
    if (
      woke !== undefined && sleep.wakeAt !== undefined && Date.parse(woke.startTime) < Date.parse(sleep.wakeAt) - skewMs
    ) {
      return `sleep ${sleep.from} woke at ${woke.startTime}, before its wakeAt ${sleep.wakeAt}`
    }
  }
  return undefined
}

/** Every execution (of a status, of a workflow), paging through GET /workflows/executions. */
export const listAll = async (
  server: Instances,
  where: { readonly status?: string; readonly workflowId?: string } = {}
): Promise<Array<Listed>> => {
  const all: Array<Listed> = []
  const filter = Object.entries(where).map(([name, value]) => `&${name}=${encodeURIComponent(value)}`).join("")
  for (let offset = 0;; offset += PAGE) {
    const reply = await server.request(
      "GET",
      `/workflows/executions?limit=${PAGE}&offset=${offset}${filter}`,
      undefined,
      60_000
    )
    if (reply?.status !== 200) {
      throw new Error(`listing executions failed: ${JSON.stringify(reply?.body ?? "no answer")}`)
    }
    const page = reply.body.data as Array<Listed>
    all.push(...page)
    if (page.length < PAGE) return all
  }
}

/** A listing's seqs (top-level events only: inner ones are read by page) must rise. */
const describeListedSeqProblem = (seqs: ReadonlyArray<number>): string | undefined =>
  seqs.every((seq, i) => Number.isInteger(seq) && seq >= 1 && (i === 0 || seq > seqs[i - 1]))
    ? undefined
    : `seqs ${JSON.stringify(seqs)}`

/** `seqs` must be exactly 1, 2, ..., n. */
const describeSeqProblem = (seqs: ReadonlyArray<number>): string | undefined => {
  for (let i = 0; i < seqs.length; i++) {
    if (seqs[i] !== i + 1) return `seqs ${JSON.stringify(seqs)}`
  }
  return undefined
}

export const checkInvariants = async (
  server: Instances,
  databaseUrl: string,
  created: ReadonlyMap<string, { readonly workflowId: string }>,
  violations: Violations,
  log: (line: string) => void,
  /** Where the chaos workflows recorded their starts (scripts/chaos-main.mjs); none: not checked. */
  recordDir?: string
): Promise<
  { readonly executions: number; readonly recorded: { readonly starts: number; readonly executions: number } }
> => {
  // Recovery re-runs what the kills left running, and parked executions wake: wait for both to settle,
  // at least until the last wakeAt (and a grace) of what is parked.
  const startedSettling = Date.now()
  const wakesBy = (running: ReadonlyArray<Listed>) =>
    Math.max(
      0,
      ...running.map((
        execution
      ) => (execution.waitingUntil === undefined ? 0 : Date.parse(execution.waitingUntil) + WAKE_GRACE_MS))
    )
  let running = await listAll(server, { status: "running" })
  while (running.length > 0 && Date.now() < Math.max(startedSettling + SETTLE_MS, wakesBy(running))) {
    await sleep(250)
    running = await listAll(server, { status: "running" })
  }
  for (const execution of running) {
    const where = `${execution.workflowId} ${execution.id}`
    if (execution.waitingUntil === undefined) violations.add("left running", where)
    else {violations.add(
        "left parked past its wakeAt (a lost timer)",
        `${where}: waiting until ${execution.waitingUntil}`
      )}
  }

  const suspended = await listAll(server, { status: "suspended" })
  log(`resuming the ${suspended.length} suspended executions`)
  let next = 0
  const resumeWorker = async () => {
    while (next < suspended.length) {
      const execution = suspended[next++]
      const reply = await server.request(
        "POST",
        `/workflows/${execution.workflowId}/executions/${execution.id}/resume`,
        {
          resumeData: { approved: true }
        }
      )
      if (reply?.status !== 200 || reply.body?.data?.status !== "completed") {
        violations.add(
          "suspended execution did not resume to completion",
          `${execution.workflowId} ${execution.id}: ${reply?.status} ${JSON.stringify(reply?.body ?? "no answer")}`
        )
      }
    }
  }
  await Promise.all(Array.from({ length: 4 }, resumeWorker))

  const all = await listAll(server)
  const listed = new Map(all.map((execution) => [execution.id, execution]))
  for (const [id, known] of created) {
    if (!listed.has(id)) {
      violations.add("execution lost", `${known.workflowId} ${id} was answered as created but is not listed`)
    }
  }
  // Due-ness is the process clock on SQLite and the database's on Postgres (same machine: a few ms).
  const skewMs = databaseUrl.startsWith("file:") ? 0 : 20
  for (const execution of all) {
    const where = `${execution.workflowId} ${execution.id} (${execution.status})`
    const types = execution.events.map((event) => event.type)
    const seqProblem = describeListedSeqProblem(execution.events.map((event) => Number(event.id)))
    if (seqProblem) violations.add("listed event seqs do not rise (API)", `${where}: ${seqProblem}`)
    const firstFinal = types.findIndex((type) => FINAL_EVENTS.has(type))
    if (firstFinal >= 0 && firstFinal < types.length - 1) {
      violations.add("event after a final event", `${where}: ${types.slice(firstFinal).join(", ")}`)
    }
    const expectedLast = FINAL_EVENT_OF[execution.status]
    if (execution.status === "running") violations.add("running at the end", where)
    else if (execution.status === "suspended") violations.add("suspended at the end", where)
    else if (expectedLast !== undefined && types.at(-1) !== expectedLast) {
      violations.add("final status without its final event", `${where}: last events ${types.slice(-3).join(", ")}`)
    }
    if (execution.status === "error") violations.add("execution failed", `${where}: ${types.slice(-2).join(", ")}`)
    const sleep = sleepProblem(execution, skewMs)
    if (sleep) violations.add("a timer fired twice or early", `${where}: ${sleep}`)
  }

  log(`${all.length} executions listed; reading the event rows from the database`)
  const stored = await readStoredRows(databaseUrl)
  if (stored.executions.length !== all.length) {
    violations.add("database and API disagree", `${stored.executions.length} rows stored, ${all.length} listed`)
  }
  const storedIds = new Set(stored.executions.map((row) => row.id))
  for (const duplicate of stored.innerCompletedTwice) {
    violations.add("a committed inner step ran again (its step-complete stored twice)", duplicate)
  }
  for (const [id, seqs] of stored.seqs) {
    if (!storedIds.has(id)) violations.add("events of an unknown execution", `${id}: ${seqs.length} events`)
    const seqProblem = describeSeqProblem(seqs)
    if (seqProblem) violations.add("event seqs are not 1..n (database)", `${id}: ${seqProblem}`)
  }
  if (recordDir === undefined) return { executions: all.length, recorded: { starts: 0, executions: 0 } }
  const starts = readRecordedStarts(recordDir, violations)
  const recorded = checkRecordedStarts(
    starts,
    await readStepEvents(databaseUrl, RECORDED_WORKFLOWS),
    skewMs,
    violations
  )
  log(`${recorded.starts} recorded starts of ${recorded.executions} executions checked against the committed events`)
  return { executions: all.length, recorded }
}

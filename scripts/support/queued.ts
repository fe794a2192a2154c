/**
 * Issue #33 in the chaos run: `chaos-queue` (scripts/chaos-main.mjs) lets two executions of a group run at
 * once. A step holds its execution's slot from its start (recorded by the step, outside the store) to its
 * step-complete (committed): per group, at no moment may more than two such spans overlap. Only spans that
 * committed are counted (a start cut by a kill has no known end), so the check never blames a kill; a
 * third admission while two ran would show as three overlapping committed spans.
 */
import type { CommittedEvent } from "./database.js"
import type { Instances } from "./instances.js"
import { listAll } from "./invariants.js"
import type { RecordedStart } from "./recorded.js"
import type { Violations } from "./violations.js"

export const QUEUE_WORKFLOW = "chaos-queue"
const LIMIT = 2

/** Each execution's group, from its input as listed. */
const groupsOf = async (server: Instances): Promise<Map<string, string>> =>
  new Map((await listAll(server, { workflowId: QUEUE_WORKFLOW })).map((execution) => {
    const input = execution.input as { readonly group?: string } | undefined
    return [execution.id, input?.group ?? "?"]
  }))

/** The most steps of one group seen running at once (a violation above the limit). */
export const checkQueue = async (
  server: Instances,
  starts: ReadonlyArray<RecordedStart>,
  events: ReadonlyArray<CommittedEvent>,
  violations: Violations
): Promise<{ readonly executions: number; readonly spans: number; readonly mostAtOnce: number }> => {
  const groups = await groupsOf(server)
  const startsOf = new Map<string, Array<number>>()
  for (const start of starts) {
    if (!groups.has(start.executionId)) continue
    const key = `${start.executionId} ${start.path}`
    const times = startsOf.get(key)
    if (times === undefined) startsOf.set(key, [start.time])
    else times.push(start.time)
  }
  const spans = new Map<string, Array<{ readonly executionId: string; readonly from: number; readonly to: number }>>()
  for (const event of events) {
    const group = groups.get(event.executionId)
    if (group === undefined || event.type !== "step-complete" || event.path === "rest") continue
    // The start that committed: the last one of its path before the commit.
    const started = (startsOf.get(`${event.executionId} ${event.path}`) ?? [])
      .reduce((last, time) => (time <= event.time ? Math.max(last, time) : last), -Infinity)
    if (started === -Infinity) continue
    const own = spans.get(group) ?? []
    own.push({ executionId: event.executionId, from: started, to: event.time })
    spans.set(group, own)
  }
  let mostAtOnce = 0
  let counted = 0
  for (const [group, own] of spans) {
    counted += own.length
    for (const span of own) {
      const running = own.filter((other) => other.from <= span.from && span.from < other.to)
      mostAtOnce = Math.max(mostAtOnce, running.length)
      if (running.length > LIMIT) {
        violations.add(
          "more executions of a concurrency key ran at once than its limit",
          `group ${group} at ${new Date(span.from).toISOString()}: ${running.map((one) => one.executionId).join(", ")}`
        )
      }
    }
  }
  return { executions: groups.size, spans: counted, mostAtOnce }
}

/**
 * Issue #33 in the chaos run: the `chaos-tick` code schedule of scripts/chaos-main.mjs fires every
 * second with `catchUp: "all"` while instances are killed. Paused once the load ends, its executions
 * (`sched:<schedule>:<fire time>`) must be one per second, from its first firing to its last, none
 * missing; each is checked like every execution by ./invariants.ts, and its step's starts by ./recorded.ts
 * (a firing launched twice would start its step twice).
 */
import type { Instances } from "./instances.js"
import { listAll } from "./invariants.js"
import type { Violations } from "./violations.js"

const WORKFLOW = "chaos-tick"

interface ScheduleView {
  readonly id: string
  readonly paused: boolean
  readonly lastFiredAt?: string | null
}

const scheduleOf = async (server: Instances): Promise<ScheduleView | undefined> => {
  const reply = await server.request("GET", `/workflows/${WORKFLOW}/schedules`)
  const list = reply?.status === 200 ? (reply.body?.data as ReadonlyArray<ScheduleView>) : undefined
  return list?.[0]
}

/** Pauses the tick schedule (before the invariants: an execution started while they are read would be running). */
export const pauseTicks = async (server: Instances, violations: Violations) => {
  const schedule = await scheduleOf(server)
  if (schedule === undefined) return violations.add("schedule missing", `${WORKFLOW} has no code schedule`)
  const reply = await server.request("POST", `/workflows/${WORKFLOW}/schedules/${schedule.id}/pause`, {})
  if (reply?.status !== 200) {
    violations.add("schedule pause refused", `${reply?.status} ${JSON.stringify(reply?.body ?? "no answer")}`)
  }
}

/** How many times the schedule fired; a gap or a time not fired once is a violation. */
export const checkTicks = async (server: Instances, violations: Violations): Promise<number> => {
  const schedule = await scheduleOf(server)
  if (schedule === undefined) {
    violations.add("schedule missing", `${WORKFLOW} has no code schedule`)
    return 0
  }
  const ids = (await listAll(server, { workflowId: WORKFLOW })).map((execution) => execution.id)
  const prefix = `sched:${schedule.id}:`
  const times = ids.map((id) => (id.startsWith(prefix) ? Date.parse(id.slice(prefix.length)) : Number.NaN))
  if (times.some(Number.isNaN)) {
    violations.add(
      "a tick execution is not a firing",
      ids.filter((_, i) => Number.isNaN(times[i])).join(", ")
    )
  }
  const sorted = times.filter((time) => !Number.isNaN(time)).sort((a, b) => a - b)
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] - sorted[i - 1] !== 1000) {
      violations.add(
        "a schedule time fired twice or not at all",
        `${new Date(sorted[i - 1]).toISOString()} then ${new Date(sorted[i]).toISOString()}`
      )
    }
  }
  const last = sorted.at(-1)
  if (last !== undefined && schedule.lastFiredAt !== new Date(last).toISOString()) {
    violations.add(
      "the schedule's last firing is not its last execution",
      `${schedule.lastFiredAt} against ${new Date(last).toISOString()}`
    )
  }
  return sorted.length
}

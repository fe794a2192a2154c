import { Either } from "effect"
import { checkDefinitionId } from "../../core/definitionId.js"
import { type CatchUp, parseCron } from "./ScheduleCron.js"

/**
 * A schedule in a workflow's code (`workflow({ ..., schedule })`): `cron` has five fields, read in
 * `timezone` (UTC when absent); each time starts one execution with `input`; `catchUp` says what
 * happens to times missed while no instance ran: skipped ("none"), the last one fired ("latest"), or
 * each fired ("all", at most the last 100). Keyed by (workflow, `name`, "default" when absent).
 */
export interface WorkflowSchedule<I> {
  readonly name?: string | undefined
  readonly cron: string
  readonly timezone?: string | undefined
  readonly input: I
  readonly catchUp: CatchUp
  /**
   * Each execution's completion callback (issue #33): checked at start-up against `webhooks.allowedHosts`,
   * signed with `webhooks.systemSecret` (WEBHOOK_SYSTEM_SECRET), which must then be set.
   */
  readonly webhook?: { readonly url: string } | undefined
}

/** The owner key of code schedules: their names are unique among themselves, apart from the API's. */
export const SYSTEM_OWNER = "system"

export const codeScheduleId = (workflowId: string, name: string) => `code.${workflowId}.${name}`

/** A workflow's code schedules with their names. */
export const codeSchedulesOf = (
  definition: { readonly schedule?: WorkflowSchedule<any> | ReadonlyArray<WorkflowSchedule<any>> | undefined }
) => {
  const declared = definition.schedule
  const list: ReadonlyArray<WorkflowSchedule<unknown>> = declared === undefined
    ? []
    : Array.isArray(declared)
    ? declared
    : [declared as WorkflowSchedule<unknown>]
  return list.map((schedule) => ({ ...schedule, name: schedule.name ?? "default" }))
}

/** Thrown at definition: a schedule name that is not an id, twice the same name, a cron that does not parse. */
export const checkCodeSchedules = (
  workflowId: string,
  declared: WorkflowSchedule<unknown> | ReadonlyArray<WorkflowSchedule<unknown>> | undefined
) => {
  const list = declared === undefined
    ? []
    : Array.isArray(declared)
    ? declared
    : [declared as WorkflowSchedule<unknown>]
  const names = new Set<string>()
  for (const schedule of list) {
    const name = schedule.name ?? "default"
    checkDefinitionId("Schedule name", name)
    if (names.has(name)) throw new Error(`Workflow ${workflowId} has two schedules named "${name}"`)
    names.add(name)
    // Seconds are checked against the minimum interval at start-up, when the settings are known.
    const parsed = parseCron(schedule.cron, schedule.timezone, 1000)
    if (Either.isLeft(parsed)) throw new Error(`Workflow ${workflowId}'s schedule ${name}: ${parsed.left}`)
  }
}

// src/workflows/schedules: cron schedules (issue #33): in a definition's code and by the API, their
// store, their firing on the due-work scheduler, their HTTP edge. It may import definition/,
// execution/, steps/, concurrency/ and the engine's layer (a firing starts an execution).
import { Context, Cron, Effect, Either, Layer, Option } from "effect"
import { type Caller, canSee, type Visibility } from "../../auth/Ownership.js"
import { ServerConfig } from "../../config/ServerConfig.js"
import { BadRequest, Conflict, NotFound } from "../../core/errors.js"
import { DueWork } from "../../scheduling/DueWork.js"
import { redactUrl } from "../../webhooks/WebhookUrls.js"
import { RegisteredWorkflows } from "../engine/WorkflowEngine.js"
import { formatBytes, jsonBytes } from "../execution/StoredValues.js"
import { decodeWorkflowInput } from "../steps/runner.js"
import { codeScheduleId, codeSchedulesOf } from "./codeSchedules.js"
import { nextFire, parseCron, scheduleMaxInputBytes, scheduleMinIntervalMs } from "./ScheduleCron.js"
import { SCHEDULE_FIRE_KIND } from "./ScheduleFiring.js"
import type { CreateScheduleRequest, ScheduleSummary, ScheduleView } from "./ScheduleSchemas.js"
import { type Page, type Schedule, ScheduleStore, type ScheduleSummaryRow } from "./ScheduleStore.js"

/** Schedules made through the API per owner at most. */
export const MAX_SCHEDULES_PER_OWNER = 100
/** The fire times a view lists. */
const LISTED_TIMES = 5

/** A schedule as lists show it: no input, and no cron walk (its stored next time only). */
export const summaryOf = (schedule: ScheduleSummaryRow): ScheduleSummary => ({
  id: schedule.id,
  workflowId: schedule.workflowId,
  name: schedule.name,
  source: schedule.source,
  cron: schedule.cron,
  timezone: schedule.timezone,
  catchUp: schedule.catchUp,
  paused: schedule.paused,
  nextFireAt: schedule.paused ? null : schedule.nextFireAt,
  lastFiredAt: schedule.lastFiredAt,
  lastExecutionId: schedule.lastExecutionId,
  failures: schedule.failures,
  lastError: schedule.lastError,
  createdAt: schedule.createdAt,
  updatedAt: schedule.updatedAt,
  ...(schedule.webhookUrl === undefined ? {} : { webhook: { url: redactUrl(schedule.webhookUrl) } })
})

/** One schedule as clients see it: its input, and its next times computed from its cron, none while paused. */
export const viewOf = (schedule: Schedule): ScheduleView => {
  const cron = Cron.parse(schedule.cron, schedule.timezone ?? undefined)
  const times: Array<string> = []
  if (!schedule.paused && Either.isRight(cron)) {
    let at = Date.parse(schedule.nextFireAt)
    times.push(schedule.nextFireAt)
    while (times.length < LISTED_TIMES) {
      at = nextFire(cron.right, at)
      times.push(new Date(at).toISOString())
    }
  }
  return { ...summaryOf(schedule), input: schedule.input, nextFireTimes: times }
}

export class WorkflowSchedules extends Context.Tag("WorkflowSchedules")<WorkflowSchedules, {
  readonly list: (
    workflowId: string | undefined,
    visibility: Visibility,
    page: Page
  ) => Effect.Effect<ReadonlyArray<ScheduleSummary>, NotFound>
  readonly create: (
    workflowId: string,
    request: CreateScheduleRequest,
    caller: Caller
  ) => Effect.Effect<ScheduleView, BadRequest | NotFound | Conflict>
  readonly get: (
    workflowId: string,
    scheduleId: string,
    visibility: Visibility
  ) => Effect.Effect<ScheduleView, NotFound>
  readonly pause: (
    workflowId: string,
    scheduleId: string,
    visibility: Visibility
  ) => Effect.Effect<ScheduleView, NotFound>
  readonly resume: (
    workflowId: string,
    scheduleId: string,
    visibility: Visibility
  ) => Effect.Effect<ScheduleView, NotFound>
  readonly remove: (
    workflowId: string,
    scheduleId: string,
    visibility: Visibility
  ) => Effect.Effect<
    { readonly scheduleId: string; readonly workflowId: string; readonly deleted: true },
    NotFound | Conflict
  >
}>() {}

export const WorkflowSchedulesLive = Layer.effect(
  WorkflowSchedules,
  Effect.gen(function*() {
    const store = yield* ScheduleStore
    const workflows = new Map((yield* RegisteredWorkflows).map((definition) => [definition.id, definition]))
    const config = yield* ServerConfig
    const minIntervalMs = scheduleMinIntervalMs(config)
    const maxInputBytes = scheduleMaxInputBytes(config)
    const dueWork = yield* Effect.serviceOption(DueWork)
    const parked = (at: string) =>
      Option.match(dueWork, { onNone: () => Effect.void, onSome: (d) => d.parked(SCHEDULE_FIRE_KIND, Date.parse(at)) })

    const findWorkflow = (id: string) => {
      const definition = workflows.get(id)
      return definition === undefined ? Effect.fail(NotFound.of("Workflow", id)) : Effect.succeed(definition)
    }

    /** The caller's schedule of this workflow; another's, or another workflow's, is not found. */
    const find = (workflowId: string, scheduleId: string, visibility: Visibility) =>
      Effect.gen(function*() {
        yield* findWorkflow(workflowId)
        const found = yield* store.get(scheduleId)
        if (Option.isNone(found) || found.value.workflowId !== workflowId || !canSee(visibility, found.value.userId)) {
          return yield* NotFound.of("Schedule", scheduleId)
        }
        return found.value
      })

    return WorkflowSchedules.of({
      list: Effect.fn("WorkflowSchedules.list")(
        function*(workflowId: string | undefined, visibility: Visibility, page: Page) {
          if (workflowId !== undefined) yield* findWorkflow(workflowId)
          const rows = yield* store.list({ workflowId, userId: visibility.all ? undefined : visibility.userId }, page)
          return rows.map(summaryOf)
        }
      ),
      create: Effect.fn("WorkflowSchedules.create")(
        function*(workflowId: string, request: CreateScheduleRequest, caller: Caller) {
          const definition = yield* findWorkflow(workflowId)
          // Measured as stored (the client's form), before the input is decoded.
          const inputBytes = jsonBytes(request.input ?? null)
          if (inputBytes > maxInputBytes) {
            return yield* new BadRequest({
              message:
                `Schedule input is ${formatBytes(inputBytes)} as JSON, over the ${
                  formatBytes(maxInputBytes)
                } a schedule may store ` +
                `(schedules.maxInputBytes, SCHEDULE_INPUT_MAX_BYTES)`
            })
          }
          const cron = parseCron(request.cron, request.timezone, minIntervalMs)
          if (Either.isLeft(cron)) return yield* new BadRequest({ message: cron.left })
          const input = decodeWorkflowInput(definition, request.input)
          if (Either.isLeft(input)) {
            return yield* new BadRequest({
              message: `input does not fit workflow ${workflowId}'s input: ${input.left.message}`
            })
          }
          const ownerKey = caller.owned ? caller.userId ?? "" : ""
          const id = crypto.randomUUID()
          const now = new Date().toISOString()
          const schedule: Schedule = {
            id,
            workflowId,
            name: request.name ?? `schedule-${id.slice(0, 8)}`,
            source: "api",
            ownerKey,
            userId: caller.owned ? caller.userId : null,
            cron: request.cron,
            timezone: request.timezone ?? null,
            // As the client sent it (its encoded form): each firing decodes it again.
            input: request.input ?? null,
            catchUp: request.catchUp ?? "none",
            paused: false,
            nextFireAt: new Date(nextFire(cron.right, Date.now())).toISOString(),
            lastFiredAt: null,
            lastExecutionId: null,
            failures: 0,
            lastError: null,
            createdAt: now,
            updatedAt: now,
            // Checked by the route (Webhooks.checkStart) before it gets here.
            ...(request.webhook === undefined ? {} : { webhookUrl: request.webhook.url })
          }
          const written = yield* store.insert(schedule, MAX_SCHEDULES_PER_OWNER)
          if (written === "full") {
            return yield* new BadRequest({
              message: `At most ${MAX_SCHEDULES_PER_OWNER} schedules per owner: delete one first`
            })
          }
          if (written === "taken") {
            return yield* new Conflict({
              message: `Workflow ${workflowId} already has a schedule named ${schedule.name}`
            })
          }
          yield* parked(schedule.nextFireAt)
          yield* Effect.logInfo("workflow schedule created").pipe(Effect.annotateLogs({ workflowId, scheduleId: id }))
          return viewOf(schedule)
        }
      ),
      get: Effect.fn("WorkflowSchedules.get")(
        function*(workflowId: string, scheduleId: string, visibility: Visibility) {
          return viewOf(yield* find(workflowId, scheduleId, visibility))
        }
      ),
      pause: Effect.fn("WorkflowSchedules.pause")(
        function*(workflowId: string, scheduleId: string, visibility: Visibility) {
          const schedule = yield* find(workflowId, scheduleId, visibility)
          const paused = yield* store.setPaused(scheduleId, true, schedule.nextFireAt)
          if (Option.isSome(paused)) return viewOf(paused.value)
          return viewOf(yield* find(workflowId, scheduleId, visibility))
        }
      ),
      resume: Effect.fn("WorkflowSchedules.resume")(
        function*(workflowId: string, scheduleId: string, visibility: Visibility) {
          const schedule = yield* find(workflowId, scheduleId, visibility)
          const cron = Cron.parse(schedule.cron, schedule.timezone ?? undefined)
          const next = Either.isRight(cron)
            ? new Date(nextFire(cron.right, Date.now())).toISOString()
            : schedule.nextFireAt
          const resumed = yield* store.setPaused(scheduleId, false, next)
          if (Option.isNone(resumed)) return viewOf(yield* find(workflowId, scheduleId, visibility))
          yield* parked(next)
          return viewOf(resumed.value)
        }
      ),
      remove: Effect.fn("WorkflowSchedules.remove")(
        function*(workflowId: string, scheduleId: string, visibility: Visibility) {
          const schedule = yield* find(workflowId, scheduleId, visibility)
          // A code schedule the code no longer declares (not fired: no instance of this code has it) may go.
          const declared = codeSchedulesOf(yield* findWorkflow(workflowId)).some((code) =>
            codeScheduleId(workflowId, code.name) === scheduleId
          )
          if (schedule.source === "code" && declared) {
            return yield* new Conflict({
              message:
                `Schedule ${schedule.name} is declared in workflow ${workflowId}'s code: pause it, or remove it from the code`
            })
          }
          if (!(yield* store.remove(scheduleId, schedule.source))) return yield* NotFound.of("Schedule", scheduleId)
          return { scheduleId, workflowId, deleted: true as const }
        }
      )
    })
  })
)

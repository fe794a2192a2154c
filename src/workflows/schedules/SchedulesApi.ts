import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../../auth/Authentication.js"
import { RouteClassAnnotation } from "../../auth/RouteClass.js"
import { Success } from "../../http/Envelope.js"
import { BadRequest, Conflict, NotFound } from "../../http/Errors.js"
import { PageParams } from "../../http/Query.js"
import { CreateScheduleRequest, ScheduleDeleted, ScheduleSummary, ScheduleView } from "./ScheduleSchemas.js"

const WorkflowPath = Schema.Struct({ id: Schema.String })
const SchedulePath = Schema.Struct({ id: Schema.String, scheduleId: Schema.String })

/**
 * Workflow schedules (issue #33), owner-scoped under JWT like executions. The console-wide list is
 * `/schedules`: `/workflows/schedules` would shadow a workflow whose id is `schedules`.
 */
export class SchedulesApi extends HttpApiGroup.make("schedules")
  .add(
    HttpApiEndpoint.get("listAllSchedules", "/schedules").setUrlParams(PageParams)
      .addSuccess(Success(Schema.Array(ScheduleSummary)))
      .annotate(
        OpenApi.Summary,
        "Every workflow's schedules the caller may see, by workflow and name (limit default 50, at most 500)"
      )
  )
  .add(
    HttpApiEndpoint.get("listSchedules", "/workflows/:id/schedules").setPath(WorkflowPath).setUrlParams(PageParams)
      .addSuccess(Success(Schema.Array(ScheduleSummary))).addError(NotFound)
      .annotate(
        OpenApi.Summary,
        "A workflow's schedules (its code's and those made through the API), by name (limit default 50, at most 500)"
      )
  )
  .add(
    HttpApiEndpoint.post("createSchedule", "/workflows/:id/schedules").setPath(WorkflowPath).setPayload(
      CreateScheduleRequest
    )
      .addSuccess(Success(ScheduleView, { status: 201 })).addError(BadRequest).addError(NotFound).addError(Conflict)
      .annotate(
        OpenApi.Summary,
        "Start the workflow at each time of a cron expression; 400 naming an invalid cron, time zone or input, or an input over schedules.maxInputBytes"
      )
  )
  .add(
    HttpApiEndpoint.get("getSchedule", "/workflows/:id/schedules/:scheduleId").setPath(SchedulePath)
      .addSuccess(Success(ScheduleView)).addError(NotFound)
      .annotate(OpenApi.Summary, "One schedule with its whole input and its next five fire times")
  )
  .add(
    HttpApiEndpoint.del("deleteSchedule", "/workflows/:id/schedules/:scheduleId").setPath(SchedulePath)
      .addSuccess(Success(ScheduleDeleted)).addError(NotFound).addError(Conflict)
      .annotate(OpenApi.Summary, "Delete a schedule (its executions stay); 409 for a schedule of the workflow's code")
  )
  .add(
    HttpApiEndpoint.post("pauseSchedule", "/workflows/:id/schedules/:scheduleId/pause").setPath(SchedulePath)
      .addSuccess(Success(ScheduleView)).addError(NotFound)
      .annotate(OpenApi.Summary, "Stop firing until resumed (already paused: unchanged)")
  )
  .add(
    HttpApiEndpoint.post("resumeSchedule", "/workflows/:id/schedules/:scheduleId/resume").setPath(SchedulePath)
      .addSuccess(Success(ScheduleView)).addError(NotFound)
      .annotate(OpenApi.Summary, "Fire again from its next time after now (times passed while paused are skipped)")
  )
  .annotate(OpenApi.Title, "Schedules")
  .annotate(RouteClassAnnotation, "execution")
  .middleware(Authentication)
{}

// src/workflows/api: the HTTP edge: the WorkflowsApi contract, its handlers and the schemas of the
// wire (WorkflowSchemas: requests, results, events, which the execution stores and answers with).
// The edge may import anything of src/workflows; below it, only WorkflowSchemas is imported.
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../../auth/Authentication.js"
import { RouteClassAnnotation } from "../../auth/RouteClass.js"
import { Success } from "../../http/Envelope.js"
import {
  BadRequest,
  Conflict,
  Forbidden,
  NotFound,
  TooManyRequests,
  UnprocessableEntity,
  ValidationError,
  WorkflowFailed
} from "../../http/Errors.js"
import { PageParams, QueryInt, Timestamp } from "../../http/Query.js"
import { EventStream } from "../../http/Schemas.js"
import {
  CancelRequest,
  CancelResult,
  ExecuteRequest,
  ExecutionDeleted,
  ExecutionEventsPage,
  ExecutionParked,
  ExecutionRecord,
  ExecutionResult,
  ExecutionState,
  ExecutionStatus,
  ReplayRequest,
  ReplayStarted,
  ResumeRequest,
  RunStarted,
  StartHeaders,
  SuspendRequest,
  SuspendResult,
  WorkflowDetails,
  WorkflowSummary
} from "./WorkflowSchemas.js"

const IdPath = Schema.Struct({ id: Schema.String })
/** execute's answer for an execution still parked when it stops waiting (issue #42). */
export const ParkedAnswer = Success(ExecutionParked, { status: 202 })
// What the explorer pre-fills (the workflow's own input and resume data come from the app: openApiExamples.ts).
const SuspendBody = SuspendRequest.annotations({ examples: [{ reason: "Paused from the API explorer" }] })
const CancelBody = CancelRequest.annotations({ examples: [{ reason: "Cancelled from the API explorer" }] })
const ReplayBody = ReplayRequest.annotations({ examples: [{ fromStep: "the-step-id" }] })
const ExecutionPath = Schema.Struct({ id: Schema.String, executionId: Schema.String })

export class WorkflowsApi extends HttpApiGroup.make("workflows")
  .add(
    HttpApiEndpoint.get("listWorkflows", "/workflows").addSuccess(Success(Schema.Array(WorkflowSummary)))
      .annotate(OpenApi.Summary, "List the registered workflows")
  )
  .add(
    HttpApiEndpoint.get("listExecutions", "/workflows/executions")
      .setUrlParams(Schema.Struct({
        workflowId: Schema.optional(Schema.String),
        status: Schema.optional(ExecutionStatus),
        waiting: Schema.optional(Schema.Literal("concurrency")).annotations({
          description: "only running executions queued for a slot of their workflow's concurrency limit"
        }),
        from: Schema.optional(Timestamp),
        to: Schema.optional(Timestamp),
        ...PageParams.fields
      }))
      .addSuccess(Success(Schema.Array(ExecutionRecord)))
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Past and present executions, newest first (limit default 50, at most 500)")
  )
  .add(
    HttpApiEndpoint.get("getExecutionRecord", "/workflows/executions/:executionId")
      .setPath(Schema.Struct({ executionId: Schema.String }))
      .addSuccess(Success(ExecutionRecord)).addError(NotFound).addError(TooManyRequests)
      .annotate(
        OpenApi.Summary,
        "One execution's whole record, sent as a stream (a listing shows executions with large events as summaries); " +
          "429 with Retry-After past workflows.recordReadsPerOwner reads in flight per caller"
      )
  )
  .add(
    HttpApiEndpoint.get("getWorkflow", "/workflows/:id").setPath(IdPath).addSuccess(Success(WorkflowDetails)).addError(
      NotFound
    )
      .annotate(OpenApi.Summary, "A workflow's steps and schemas")
  )
  .add(
    HttpApiEndpoint.post("executeWorkflow", "/workflows/:id/execute").annotate(RouteClassAnnotation, "execution")
      .setPath(IdPath).setPayload(ExecuteRequest)
      .setHeaders(StartHeaders).addError(Forbidden)
      .addSuccess(Success(ExecutionResult)).addSuccess(ParkedAnswer).addError(ValidationError).addError(BadRequest)
      .addError(NotFound)
      .addError(UnprocessableEntity).addError(WorkflowFailed).addError(Conflict).addError(TooManyRequests)
      .annotate(OpenApi.Summary, "Run to completion or to the first suspension")
      .annotate(
        OpenApi.Description,
        "Once the execution parks (a sleep step, or queued for a concurrency slot), answers 202 with its state after EXECUTE_WAIT_SECONDS, or at once with `options.wait: \"parked\"`"
      )
  )
  .add(
    HttpApiEndpoint.post("runWorkflow", "/workflows/:id/run").annotate(RouteClassAnnotation, "execution").setPath(
      IdPath
    ).setPayload(ExecuteRequest)
      .setHeaders(StartHeaders).addError(Forbidden)
      .addSuccess(Success(RunStarted, { status: 201 })).addError(ValidationError).addError(BadRequest).addError(
        NotFound
      )
      .addError(UnprocessableEntity).addError(Conflict).addError(TooManyRequests)
      .annotate(OpenApi.Summary, "Start in the background")
  )
  .add(
    HttpApiEndpoint.post("streamWorkflow", "/workflows/:id/stream").annotate(RouteClassAnnotation, "execution").setPath(
      IdPath
    ).setPayload(ExecuteRequest)
      .setHeaders(StartHeaders).addError(Forbidden)
      .addSuccess(EventStream).addError(ValidationError).addError(BadRequest).addError(NotFound)
      .addError(UnprocessableEntity).addError(Conflict).addError(TooManyRequests)
      .annotate(OpenApi.Summary, "Start and stream the execution's events; ends with workflow-result")
  )
  .add(
    HttpApiEndpoint.post("suspendExecution", "/workflows/:id/executions/:executionId/suspend").annotate(
      RouteClassAnnotation,
      "execution"
    ).setPath(ExecutionPath)
      .setPayload(SuspendBody).addSuccess(Success(SuspendResult)).addError(BadRequest).addError(NotFound)
      .annotate(OpenApi.Summary, "Suspend a running execution at its current step")
  )
  .add(
    HttpApiEndpoint.post("resumeExecution", "/workflows/:id/executions/:executionId/resume").annotate(
      RouteClassAnnotation,
      "execution"
    ).setPath(ExecutionPath)
      .setPayload(ResumeRequest).addSuccess(Success(ExecutionResult)).addError(ValidationError).addError(BadRequest)
      .addError(NotFound).addError(Conflict).addError(WorkflowFailed)
      .annotate(
        OpenApi.Summary,
        "Resume a suspended execution (optionally from another step); 409 when its workflow no longer has the step it is suspended at"
      )
  )
  .add(
    HttpApiEndpoint.post("replayExecution", "/workflows/:id/executions/:executionId/replay").annotate(
      RouteClassAnnotation,
      "execution"
    )
      .setPath(ExecutionPath).setPayload(ReplayBody).setHeaders(StartHeaders).addError(Forbidden)
      .addSuccess(Success(ReplayStarted, { status: 201 })).addError(ValidationError).addError(BadRequest).addError(
        NotFound
      )
      .addError(Conflict).addError(UnprocessableEntity).addError(TooManyRequests)
      .annotate(
        OpenApi.Summary,
        "Start a new execution that copies the outputs of the steps before fromStep from this one and runs from there"
      )
      .annotate(
        OpenApi.Description,
        "Not the stream's replay of events (GET …/stream): a new execution, the caller's, linked to this one " +
          "(replayOf on it, replays on this one). 400 for an unknown step, a step inside another (replay from its top-level step) or " +
          "input with a fromStep other than the first; 409 when a step before fromStep has no committed output here (the workflow changed, " +
          "or the execution did not get that far)"
      )
  )
  .add(
    HttpApiEndpoint.post("restartExecution", "/workflows/:id/executions/:executionId/restart").annotate(
      RouteClassAnnotation,
      "execution"
    )
      .setPath(ExecutionPath).setHeaders(StartHeaders).addError(Forbidden)
      .addSuccess(Success(ReplayStarted, { status: 201 })).addError(ValidationError).addError(BadRequest).addError(
        NotFound
      )
      .addError(Conflict).addError(UnprocessableEntity).addError(TooManyRequests)
      .annotate(
        OpenApi.Summary,
        "Replay a failed execution from the step it failed at (a new execution; 409 unless it is error)"
      )
  )
  .add(
    HttpApiEndpoint.post("cancelExecution", "/workflows/:id/executions/:executionId/cancel").annotate(
      RouteClassAnnotation,
      "execution"
    ).setPath(ExecutionPath)
      .setPayload(CancelBody).addSuccess(Success(CancelResult)).addError(BadRequest).addError(NotFound)
      .annotate(OpenApi.Summary, "Cancel a running or suspended execution")
  )
  .add(
    HttpApiEndpoint.get("executionState", "/workflows/:id/executions/:executionId/state").setPath(ExecutionPath)
      .addSuccess(Success(ExecutionState)).addError(NotFound)
      .annotate(OpenApi.Summary, "An execution's state")
  )
  .add(
    HttpApiEndpoint.get("executionEvents", "/workflows/:id/executions/:executionId/events").setPath(ExecutionPath)
      .setUrlParams(Schema.Struct({ after: Schema.optional(QueryInt), limit: Schema.optional(QueryInt) }))
      .addSuccess(Success(ExecutionEventsPage)).addError(NotFound)
      .annotate(
        OpenApi.Summary,
        "A page of the execution's events after `after`, inner steps' included (limit default 100, at most 1000; " +
          "and at most 256 KiB of events as JSON, or one larger event: follow nextAfter)"
      )
  )
  .add(
    HttpApiEndpoint.del("deleteExecution", "/workflows/:id/executions/:executionId").annotate(
      RouteClassAnnotation,
      "execution"
    )
      .setPath(ExecutionPath)
      .addSuccess(Success(ExecutionDeleted)).addError(BadRequest).addError(NotFound)
      .annotate(
        OpenApi.Summary,
        "Delete a finished execution (completed, error, cancelled) with its events; 400 while running or suspended"
      )
  )
  .add(
    HttpApiEndpoint.get("attachExecution", "/workflows/:id/executions/:executionId/stream").setPath(ExecutionPath)
      .setUrlParams(Schema.Struct({ after: Schema.optional(QueryInt) }))
      .addSuccess(EventStream).addError(NotFound)
      .annotate(OpenApi.Summary, "Replay events after Last-Event-ID (or ?after=) and follow live ones")
  )
  .annotate(OpenApi.Title, "Workflows")
  .annotate(RouteClassAnnotation, "management")
  .middleware(Authentication)
{}

import { Effect, Either, Option, ParseResult, Schema, Tracer } from "effect"
import type { ErrorDetail } from "../../core/errorDetail.js"
import { withoutFieldsInSpan } from "../../observability/errorDetail.js"
import { countExecution } from "../../observability/metrics/instruments.js"
import { capString } from "../../observability/Redaction.js"
import type * as S from "../api/WorkflowSchemas.js"
import type { Step, WorkflowDefinition } from "../definition/Workflow.js"
import type { StepOutcome } from "../steps/runner.js"
import { now } from "./ExecutionRows.js"
import type { Ending, Execution } from "./ExecutionStore.js"

/** How an execution's events and endings are made and logged, and how a step's span is recorded. */

export const workflowEvent = (
  execution: { readonly id: string },
  type: S.WorkflowEvent["type"],
  from: string,
  status: string,
  extra: Partial<S.WorkflowEvent> = {}
): S.WorkflowEvent => ({ type, executionId: execution.id, from, timestamp: now(), status, ...extra })

/**
 * The ending for the last step's data. Stored as it is when it decodes with `result` (JSON-shaped data,
 * as before); else, a value of the schema's type (a Date of `Schema.Date`), stored encoded: what the
 * typed `executeWorkflow` decodes back to the type.
 */
export const checkResult = (definition: WorkflowDefinition, output: unknown): Ending => {
  const schema = definition.result as Schema.Schema<unknown, unknown>
  return Either.match(Schema.decodeUnknownEither(schema)(output), {
    onLeft: (error) =>
      Either.match(Schema.encodeUnknownEither(schema, { onExcessProperty: "preserve" })(output), {
        onLeft: () => ({
          status: "error",
          error: `result does not match the workflow's result schema: ${
            ParseResult.TreeFormatter.formatErrorSync(error)
          }`
        }),
        onRight: (encoded) => ({ status: "completed", output: encoded })
      }),
    onRight: () => ({ status: "completed", output })
  })
}

/** The workflow-error event of a failed execution: `error` the message, `errorDetail` the step's error when it had one. */
/** The events an execution starts with: workflow-start, and its first step's step-start when it has one. */
export const openingEvents = (definition: WorkflowDefinition, execution: Execution): ReadonlyArray<S.WorkflowEvent> => {
  const started = workflowEvent(execution, "workflow-start", definition.name, "running", { input: execution.input })
  return definition.steps.length === 0 ? [started] : [started, stepStart(definition, execution, 0, execution.input)]
}

export const stepStart = (definition: WorkflowDefinition, execution: Execution, index: number, input: unknown) => {
  const step = definition.steps[index]
  return workflowEvent(execution, "step-start", step.id, "running", { stepIndex: index, stepType: step.type, input })
}

/** A suspension at `stepId` (a path for an inner step) of the top-level step at `index`: its event and its stored form. */
export const suspensionAt = (
  execution: Execution,
  stepId: string,
  index: number,
  signal: { readonly reason: string; readonly data: unknown; readonly wakeAt?: string | undefined }
) => {
  const suspended = workflowEvent(execution, "workflow-suspended", stepId, "suspended", {
    stepIndex: index,
    reason: signal.reason,
    ...(signal.data === undefined ? {} : { data: signal.data })
  })
  const wakeAt = signal.wakeAt === undefined ? {} : { wakeAt: signal.wakeAt }
  return {
    suspended,
    suspension: {
      suspendedAt: suspended.timestamp,
      reason: signal.reason,
      stepIndex: index,
      stepId,
      data: signal.data,
      ...wakeAt
    }
  }
}

export const errorEvent = (execution: Execution, error: string, errorDetail: ErrorDetail | undefined) =>
  workflowEvent(execution, "workflow-error", execution.workflowName, "error", {
    error,
    ...(errorDetail ? { errorDetail } : {})
  })

export const endingEvent = (definition: WorkflowDefinition, execution: Execution, ending: Ending) =>
  ending.status === "completed"
    ? workflowEvent(execution, "workflow-complete", definition.name, "success", { output: ending.output })
    : errorEvent(execution, ending.error, ending.errorDetail)

/** The message part of a failure's log line when its detail rides beside it: the fields are in the detail. */
const LOGGED_ERROR_CAP = 2 * 1024

/**
 * Logs under the current span's ids without being one of its events: a log line inside a span is
 * also recorded as an event of the span, and this one carries user data that spans keep only with
 * `recordContent` (an external span as parent is one Effect's tracer does not write events to).
 */
const besideSpan = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    Effect.option(Effect.currentSpan),
    Option.match({
      onNone: () => effect,
      onSome: (span) =>
        Effect.withParentSpan(
          effect,
          Tracer.externalSpan({ traceId: span.traceId, spanId: span.spanId, sampled: span.sampled })
        )
    })
  )

/**
 * A failure's log line carries its detail's tag and fields (its message is the line), within the log
 * entry's cap: the line's text is cut first so that the detail (up to 8 KiB of fields) fits beside it.
 * It is not an event of the span it is written in unless `recordContent`.
 */
export const logEnding = (ending: Ending, recordContent: boolean) => {
  if (ending.status === "completed") {
    return Effect.zipRight(countExecution("completed"), Effect.logInfo("workflow completed"))
  }
  if (ending.errorDetail === undefined) {
    return Effect.zipRight(countExecution("failed"), Effect.logWarning(`workflow failed: ${ending.error}`))
  }
  const line = Effect.annotateLogs(
    Effect.logWarning(`workflow failed: ${capString(ending.error, LOGGED_ERROR_CAP)}`),
    "errorDetail",
    { _tag: ending.errorDetail._tag, fields: ending.errorDetail.fields }
  )
  return Effect.zipRight(countExecution("failed"), recordContent ? line : besideSpan(line))
}

/**
 * Runs a step in its `workflow.step` span. A failed step's span gets `error.type` (the error's tag),
 * and its fields (`error.fields`) only with `recordContent`: they are the user's data.
 */
export const inStepSpan = <A>(
  run: Effect.Effect<A, StepOutcome>,
  attributes: {
    readonly definition: WorkflowDefinition
    readonly executionId: string
    readonly step: Step
    readonly index: number
    readonly attempt?: number | undefined
  },
  recordContent: boolean
): Effect.Effect<A, StepOutcome> => {
  const annotated = Effect.tapError(run, (outcome) => {
    if (outcome._tag !== "StepFailed" || outcome.detail === undefined) return Effect.void
    const detail = outcome.detail
    return Effect.annotateCurrentSpan(
      recordContent
        ? { "error.type": detail._tag, "error.fields": JSON.stringify(detail.fields) }
        : { "error.type": detail._tag }
    )
  })
  const span = {
    captureStackTrace: false,
    attributes: {
      "entity.type": "workflow",
      "entity.id": attributes.definition.id,
      "execution.id": attributes.executionId,
      "step.id": attributes.step.id,
      "step.type": attributes.step.type,
      "step.index": attributes.index,
      "step.path": attributes.step.id,
      "step.attempt": attributes.attempt ?? 1
    }
  }
  // The span's status and exception event carry the failure's message: made of the fields, it is their tag alone.
  return recordContent
    ? Effect.withSpan(annotated, "workflow.step", span)
    : withoutFieldsInSpan(
      annotated,
      "workflow.step",
      span,
      (outcome) => (outcome._tag === "StepFailed" ? outcome.spanMessage : undefined)
    )
}

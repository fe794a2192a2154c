import { Effect, Either, ParseResult, Schema } from "effect"
import type { ErrorDetail } from "../core/errorDetail.js"
import { countExecution } from "../observability/metrics/instruments.js"
import { capString } from "../observability/Redaction.js"
import { now } from "./ExecutionRows.js"
import type { Ending, Execution } from "./ExecutionStore.js"
import type { StepOutcome } from "./runner.js"
import type { Step, WorkflowDefinition } from "./Workflow.js"
import type * as S from "./WorkflowSchemas.js"

/** How an execution's events and endings are made and logged, and how a step's span is recorded. */

export const workflowEvent = (
  execution: { readonly id: string },
  type: S.WorkflowEvent["type"],
  from: string,
  status: string,
  extra: Partial<S.WorkflowEvent> = {}
): S.WorkflowEvent => ({ type, executionId: execution.id, from, timestamp: now(), status, ...extra })

export const checkResult = (definition: WorkflowDefinition, output: unknown): Ending =>
  Either.match(Schema.decodeUnknownEither(definition.result as Schema.Schema<unknown>)(output), {
    onLeft: (error) => ({
      status: "error",
      error: `result does not match the workflow's result schema: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
    }),
    onRight: () => ({ status: "completed", output })
  })

/** The workflow-error event of a failed execution: `error` the message, `errorDetail` the step's error when it had one. */
export const errorEvent = (execution: Execution, error: string, errorDetail: ErrorDetail | undefined) =>
  workflowEvent(execution, "workflow-error", execution.workflowName, "error", { error, ...(errorDetail ? { errorDetail } : {}) })

export const endingEvent = (definition: WorkflowDefinition, execution: Execution, ending: Ending) =>
  ending.status === "completed"
    ? workflowEvent(execution, "workflow-complete", definition.name, "success", { output: ending.output })
    : errorEvent(execution, ending.error, ending.errorDetail)

/** The message part of a failure's log line when its detail rides beside it: the fields are in the detail. */
const LOGGED_ERROR_CAP = 2 * 1024

/**
 * A failure's log line carries its detail's tag and fields (its message is the line), within the log
 * entry's cap: the line's text is cut first so that the detail (up to 8 KiB of fields) fits beside it.
 */
export const logEnding = (ending: Ending) =>
  ending.status === "completed"
    ? Effect.zipRight(countExecution("completed"), Effect.logInfo("workflow completed"))
    : Effect.zipRight(
      countExecution("failed"),
      ending.errorDetail === undefined
        ? Effect.logWarning(`workflow failed: ${ending.error}`)
        : Effect.annotateLogs(
          Effect.logWarning(`workflow failed: ${capString(ending.error, LOGGED_ERROR_CAP)}`),
          "errorDetail",
          { _tag: ending.errorDetail._tag, fields: ending.errorDetail.fields }
        )
    )

/**
 * Runs a step in its `workflow.step` span. A failed step's span gets `error.type` (the error's tag),
 * and its fields (`error.fields`) only with `recordContent`: they are the user's data.
 */
export const inStepSpan = <A>(
  run: Effect.Effect<A, StepOutcome>,
  attributes: { readonly definition: WorkflowDefinition; readonly executionId: string; readonly step: Step; readonly index: number },
  recordContent: boolean
): Effect.Effect<A, StepOutcome> =>
  run.pipe(
    Effect.tapError((outcome) => {
      if (outcome._tag !== "StepFailed" || outcome.detail === undefined) return Effect.void
      const detail = outcome.detail
      return Effect.annotateCurrentSpan(recordContent
        ? { "error.type": detail._tag, "error.fields": JSON.stringify(detail.fields) }
        : { "error.type": detail._tag })
    }),
    Effect.withSpan("workflow.step", {
      captureStackTrace: false,
      attributes: {
        "entity.type": "workflow",
        "entity.id": attributes.definition.id,
        "execution.id": attributes.executionId,
        "step.id": attributes.step.id,
        "step.type": attributes.step.type,
        "step.index": attributes.index
      }
    })
  )

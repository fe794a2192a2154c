import { Duration, Either, JSONSchema, type Schema } from "effect"
import { WorkflowFailed } from "../../core/errors.js"
import { markSpanMessage, spanSafeError } from "../../observability/errorDetail.js"
import type * as S from "../api/WorkflowSchemas.js"
import type { Step } from "../definition/Workflow.js"
import { innerStepsOf } from "../steps/innerViews.js"
import { timeoutOf } from "../steps/Policy.js"
import type { Execution, ExecutionListing, Replay, StoredEvent } from "./ExecutionStore.js"

/** What the API shows of workflows and executions: pure functions of the definitions and stored rows. */

type Json = Record<string, unknown>

export const toJsonSchema = (schema: Schema.Schema.Any | undefined): Json | undefined =>
  schema === undefined ? undefined : (JSONSchema.make(schema) as unknown as Json)

type Described = Omit<Step, "type"> & { readonly type: string }

const describeOne = (step: Described) => ({
  id: step.id,
  name: step.name ?? step.id,
  type: step.type,
  purpose: step.purpose ?? "",
  ...(step.inputSchema ? { inputSchema: toJsonSchema(step.inputSchema)! } : {}),
  ...(step.outputSchema ? { outputSchema: toJsonSchema(step.outputSchema)! } : {}),
  ...(step.suspendSchema ? { suspendSchema: toJsonSchema(step.suspendSchema)! } : {}),
  ...(step.resumeSchema ? { resumeSchema: toJsonSchema(step.resumeSchema)! } : {}),
  ...(step.retry === undefined ? {} : { retry: true as const }),
  ...policyTimeout(step)
})

const policyTimeout = (step: Described) => {
  const timeout = timeoutOf(step)
  return timeout === undefined ? {} : { timeoutMs: Duration.toMillis(timeout) }
}

export const describeStep = (step: Step): typeof S.StepDescription.Type => {
  const inner = innerStepsOf(step).map(({ path, step: one }) => ({ ...describeOne(one), path }))
  return { ...describeOne(step), ...(inner.length > 0 ? { steps: inner } : {}) }
}

/** A suspension's data, when it has some (a suspension by the API or without data has none). */
const dataOf = (suspension: { readonly data?: unknown }): { readonly data?: unknown } =>
  suspension.data === undefined ? {} : { data: suspension.data }

/** The answer of execute and resume: the settled execution, or its failure. */
export const resultOf = (execution: Execution): Either.Either<S.ExecutionResult, WorkflowFailed> => {
  if (execution.status === "error") {
    const message = `Failed to execute workflow: ${execution.error ?? "unknown error"}`
    const failed = new WorkflowFailed({
      message,
      executionId: execution.id,
      ...(execution.errorDetail ? { errorDetail: execution.errorDetail } : {})
    })
    // Its spans (WorkflowEngine.execute, .resume) record the message without the error's fields.
    return Either.left(markSpanMessage(failed, spanSafeError(message, execution.errorDetail)))
  }
  const suspension = execution.status === "suspended" ? execution.suspension : undefined
  return Either.right({
    executionId: execution.id,
    startAt: execution.createdAt,
    endAt: execution.endedAt ?? null,
    status: execution.status,
    result: execution.status === "completed" ? execution.output ?? null : null,
    ...(suspension
      ? {
        suspension: {
          suspendedAt: suspension.suspendedAt,
          reason: suspension.reason,
          suspendedStepIndex: suspension.stepIndex,
          ...dataOf(suspension)
        }
      }
      : {})
  })
}

/** The execution as it is once `entry`, its settling event, is stored (what the row then holds). */
export const settledBy = (execution: Execution, { event, seq }: StoredEvent): Execution => {
  const settled = { ...execution, lastSeq: seq, updatedAt: event.timestamp }
  switch (event.type) {
    case "workflow-complete":
      return { ...settled, status: "completed", output: event.output, endedAt: event.timestamp }
    case "workflow-error":
      return {
        ...settled,
        status: "error",
        error: event.error,
        errorDetail: event.errorDetail,
        endedAt: event.timestamp
      }
    case "workflow-cancelled":
      return { ...settled, status: "cancelled", endedAt: event.timestamp }
    case "workflow-suspended":
      return {
        ...settled,
        status: "suspended",
        suspension: {
          suspendedAt: event.timestamp,
          reason: event.reason ?? "",
          stepIndex: event.stepIndex ?? 0,
          stepId: event.from,
          ...dataOf(event)
        }
      }
    case "workflow-start":
    case "step-start":
    case "step-complete":
    case "step-retry":
    case "step-sleep":
      return settled
  }
}

/** The last event of every workflow stream: the execution's result. */
export interface WorkflowResultEvent {
  readonly type: "workflow-result"
  readonly executionId: string
  readonly status: S.ExecutionStatus
  readonly result: unknown
  readonly endAt: string | null
  readonly suspension?: NonNullable<S.ExecutionResult["suspension"]>
  readonly error?: string
  readonly errorDetail?: S.WorkflowEvent["errorDetail"]
}

/** The last entry of every followed execution: its result, numbered after the execution's last event. */
export interface ResultEntry {
  readonly seq: number
  readonly event: WorkflowResultEvent
}

/** What a workflow stream carries: the execution's events in order, then its result. */
export type ExecutionUpdate = StoredEvent | ResultEntry

export const resultEntry = (execution: Execution): ResultEntry => {
  const result = resultOf(execution)
  return {
    seq: execution.lastSeq + 1,
    event: {
      type: "workflow-result",
      executionId: execution.id,
      status: execution.status,
      result: Either.isRight(result) ? result.right.result : null,
      endAt: execution.endedAt ?? null,
      ...(Either.isRight(result) && result.right.suspension ? { suspension: result.right.suspension } : {}),
      ...(execution.error ? { error: execution.error } : {}),
      ...(execution.errorDetail ? { errorDetail: execution.errorDetail } : {})
    }
  }
}

/** A replay's link to its original, and the original's replays (issue #33): absent when there is none. */
export const replayLinksOf = (
  execution: { readonly replayOf?: string | undefined; readonly replayFrom?: string | undefined },
  replays: ReadonlyArray<Replay> = []
) => ({
  ...(execution.replayOf === undefined
    ? {}
    : { replayOf: { executionId: execution.replayOf, fromStep: execution.replayFrom ?? "" } }),
  ...(replays.length === 0
    ? {}
    : { replays: replays.map(({ createdAt, executionId, fromStep }) => ({ executionId, fromStep, createdAt })) })
})

export const stateOf = (
  workflowId: string,
  execution: Execution,
  replays?: ReadonlyArray<Replay>
): typeof S.ExecutionState.Type => ({
  executionId: execution.id,
  workflowId,
  status: execution.status,
  startAt: execution.createdAt,
  ...(execution.status === "suspended" && execution.suspension
    ? {
      suspension: {
        suspendedAt: execution.suspension.suspendedAt,
        reason: execution.suspension.reason,
        stepIndex: execution.suspension.stepIndex,
        stepId: execution.suspension.stepId,
        ...dataOf(execution.suspension)
      }
    }
    : {}),
  input: execution.input,
  context: execution.context,
  ...(execution.endedAt ? { endAt: execution.endedAt } : {}),
  ...(execution.status === "completed" ? { result: execution.output ?? null } : {}),
  ...(execution.error ? { error: execution.error } : {}),
  ...(execution.errorDetail ? { errorDetail: execution.errorDetail } : {}),
  ...waitingOf(execution),
  ...replayLinksOf(execution, replays)
})

/** What a listing shows of a step-retry event (issue #31): the attempt that failed, its error, the back-off. */
const retryFields = (e: S.WorkflowEvent) => ({
  attempt: e.attempt,
  delayMs: e.delayMs,
  retryAt: e.retryAt,
  error: e.error,
  ...(e.errorDetail === undefined ? {} : { errorDetail: e.errorDetail })
})

/**
 * `waitingUntil` of a running execution parked by a sleep step (issue #31); `waiting: 'concurrency'`
 * and `queuedAt` of one queued for a concurrency slot (issue #33).
 */
export const waitingOf = (
  execution: { readonly status: string; readonly wakeAt?: string | undefined; readonly queuedAt?: string | undefined }
): { readonly waitingUntil?: string; readonly waiting?: "concurrency"; readonly queuedAt?: string } =>
  execution.status !== "running"
    ? {}
    : execution.queuedAt !== undefined
    ? { waiting: "concurrency", queuedAt: execution.queuedAt }
    : execution.wakeAt !== undefined
    ? { waitingUntil: execution.wakeAt }
    : {}

/** A stored event as a record shows it. */
export const eventRecordOf = ({ event: e, seq }: StoredEvent): typeof S.ExecutionEventRecord.Type => ({
  id: String(seq),
  type: e.type,
  name: e.from,
  from: e.from,
  startTime: e.timestamp,
  endTime: e.timestamp,
  status: e.status,
  ...(e.input !== undefined ? { input: e.input } : {}),
  ...(e.output !== undefined ? { output: e.output } : {}),
  ...(e.type === "step-retry" ? retryFields(e) : {}),
  ...(e.wakeAt !== undefined ? { wakeAt: e.wakeAt } : {}),
  ...(e.path !== undefined ? { path: e.path } : {})
})

export const recordOf = (
  execution: ExecutionListing,
  events: ReadonlyArray<StoredEvent>,
  replays?: ReadonlyArray<Replay>
): typeof S.ExecutionRecord.Type => ({
  id: execution.id,
  workflowId: execution.workflowId,
  workflowName: execution.workflowName,
  status: execution.status,
  input: execution.input,
  metadata: execution.metadata,
  events: events.map(eventRecordOf),
  ...(execution.status === "completed" ? { output: execution.output ?? null } : {}),
  createdAt: execution.createdAt,
  updatedAt: execution.updatedAt,
  ...waitingOf(execution),
  ...replayLinksOf(execution, replays)
})

import type { SqlClient, Statement } from "@effect/sql"
import { Either, Schema } from "effect"
import { ErrorDetail } from "../../core/errorDetail.js"
import type { Execution } from "../execution/ExecutionRows.js"

/**
 * A failed attempt as committed: its error's tag, message and fields (safe to record, see
 * observability/errorDetail.ts; the fields dropped when over RECORDED_FIELDS_MAX bytes) and when it
 * failed. After a crash the retry schedule is stepped again with these.
 */
export const RecordedError = Schema.Struct({ ...ErrorDetail.fields, at: Schema.String })
export interface RecordedError extends Schema.Schema.Type<typeof RecordedError> {}

const RecordedErrors = Schema.parseJson(Schema.Array(RecordedError))

/** What the fields of a recorded error may take as JSON before they are left out (its tag and message stay). */
export const RECORDED_FIELDS_MAX = 1024

/** The retry under way at a step: the attempt it is at (1-based), its first attempt's start, the next attempt's due time. */
export interface RetryState {
  readonly stepIndex: number
  readonly stepId: string
  /** The attempt that runs next (the failed ones are `errors`). */
  readonly attempt: number
  readonly firstAt: string
  readonly dueAt: string
  readonly errors: ReadonlyArray<RecordedError>
}

const keyOf = (stepIndex: number, stepId: string) => `${stepIndex}:${stepId}`

/**
 * The retry committed for the step at `stepIndex` (with this id), if the row holds one: columns left
 * by an earlier step (which succeeded since) name another step and are ignored.
 */
export const retryStateOf = (execution: Execution, stepIndex: number, stepId: string): RetryState | undefined => {
  const { stepAttempt, stepAttemptKey, stepFirstAttemptAt, stepRetryAt, stepRetryErrors } = execution
  if (stepAttempt === undefined || stepAttemptKey !== keyOf(stepIndex, stepId)) return undefined
  if (stepFirstAttemptAt === undefined || stepRetryAt === undefined) return undefined
  const errors = Schema.decodeUnknownEither(RecordedErrors)(stepRetryErrors ?? "[]")
  return {
    stepIndex,
    stepId,
    attempt: stepAttempt,
    firstAt: stepFirstAttemptAt,
    dueAt: stepRetryAt,
    errors: Either.getOrElse(errors, () => [])
  }
}

/**
 * The conditional write of a retry (ExecutionStore.retry): the step's attempt state, with the
 * step-retry event counted in, only while `held` and at that step.
 */
export const retryUpdate = (
  sql: SqlClient.SqlClient,
  held: Statement.Fragment,
  state: RetryState,
  at: string,
  counted: Statement.Fragment
) =>
  sql`UPDATE workflow_executions SET step_attempt = ${state.attempt}, step_attempt_key = ${
    keyOf(state.stepIndex, state.stepId)
  },
    step_first_attempt_at = ${state.firstAt}, step_retry_at = ${state.dueAt},
    step_retry_errors = ${JSON.stringify(Schema.encodeSync(Schema.Array(RecordedError))(state.errors))},
    last_seq = last_seq + 1, updated_at = ${at}, ${counted}
    WHERE ${held} AND step_index = ${state.stepIndex} RETURNING last_seq`

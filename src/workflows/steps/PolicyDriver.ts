import { Effect, Option } from "effect"
import { inStepSpan, workflowEvent } from "../ExecutionEndings.js"
import type { Claim, Execution, ExecutionStore } from "../ExecutionStore.js"
import { stepFailure, type StepOutcome } from "../runner.js"
import type { Step, WorkflowDefinition } from "../Workflow.js"
import type * as S from "../WorkflowSchemas.js"
import { timed } from "./Policy.js"
import { type RetryCommit, runWithPolicy } from "./PolicyRun.js"
import { retryStateOf } from "./RetryState.js"

/** The step-retry event of a retry: the attempt that failed, its error, and when the next one is due. */
const retryEvent = (execution: Execution, step: Step, index: number, retry: RetryCommit): S.WorkflowEvent =>
  workflowEvent(execution, "step-retry", step.id, "retrying", {
    stepIndex: index,
    stepType: step.type,
    attempt: retry.failed,
    error: retry.failure.message,
    ...(retry.failure.detail === undefined ? {} : { errorDetail: retry.failure.detail }),
    delayMs: retry.delayMs,
    retryAt: retry.state.dueAt
  })

/**
 * One top-level step under its policies, as the drive loop runs it: each attempt in its own
 * `workflow.step` span (with `step.attempt`), bounded by the step's timeout, and each retry committed
 * with its step-retry event by a write conditional on the claim. None when that write was refused.
 */
export const policyStep = <E>(options: {
  readonly definition: WorkflowDefinition
  readonly execution: Execution
  readonly claim: Claim
  readonly step: Step
  readonly index: number
  readonly run: (attempt: number) => Effect.Effect<unknown, StepOutcome>
  readonly recordContent: boolean
  readonly store: ExecutionStore["Type"]
  readonly checkpoint: (
    claim: Claim,
    events: ReadonlyArray<S.WorkflowEvent>,
    write: Effect.Effect<Option.Option<number>>
  ) => Effect.Effect<Option.Option<number>, E>
}) => {
  const { claim, definition, execution, index, step, store } = options
  return runWithPolicy({
    step,
    stepIndex: index,
    workflowId: definition.id,
    restored: index === execution.stepIndex ? retryStateOf(execution, index, step.id) : undefined,
    run: (attempt) =>
      inStepSpan(
        timed(step, options.run(attempt), (timeout) => stepFailure(step.id, timeout)),
        { definition, executionId: execution.id, step, index, attempt },
        options.recordContent
      ),
    commit: (retry) => {
      const event = retryEvent(execution, step, index, retry)
      return Effect.map(options.checkpoint(claim, [event], store.retry(claim, retry.state, event)), Option.isSome)
    }
  })
}

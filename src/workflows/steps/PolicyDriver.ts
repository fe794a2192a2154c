import { Effect, Either, Option } from "effect"
import type * as S from "../api/WorkflowSchemas.js"
import type { Step, WorkflowDefinition } from "../definition/WorkflowDefinition.js"
import { inStepSpan, workflowEvent } from "../execution/ExecutionEndings.js"
import type { Claim, Execution, ExecutionStore } from "../execution/ExecutionStore.js"
import { retryOf, timed, timeoutOf } from "./Policy.js"
import { type RetryCommit, runWithPolicy } from "./PolicyRun.js"
import { retryStateOf } from "./RetryState.js"
import { stepFailure, type StepOutcome } from "./runner.js"

/**
 * The step-retry event of a retry: the attempt that failed, its error, and when the next one is due.
 * `from` is the step's id; an inner step's (steps/innerPolicy.ts) has its `path` and the outer step's type.
 */
export const retryEvent = (
  execution: { readonly id: string },
  step: { readonly from: string; readonly stepType: string; readonly path?: string | undefined },
  index: number,
  retry: RetryCommit
): S.WorkflowEvent => ({
  ...workflowEvent(execution, "step-retry", step.from, "retrying", {
    stepIndex: index,
    stepType: step.stepType,
    ...(step.path === undefined ? {} : { path: step.path }),
    attempt: retry.failed,
    error: retry.failure.message,
    ...(retry.failure.detail === undefined ? {} : { errorDetail: retry.failure.detail }),
    delayMs: retry.delayMs,
    retryAt: retry.state.dueAt
  }),
  timestamp: retry.failedAt
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
  /** The step's input (what an andTap passes on). */
  readonly data: unknown
  /** Runs the step (or `as`, the same step run otherwise) at an attempt. */
  readonly run: (attempt: number, as?: Step) => Effect.Effect<unknown, StepOutcome>
  readonly recordContent: boolean
  /** Done when the instance starts draining: a back-off stops waiting (the answer is then none). */
  readonly drained: Effect.Effect<void>
  /** Whether a long back-off parks the execution (the driver has durable timers). */
  readonly parks: boolean
  readonly store: ExecutionStore["Type"]
  readonly checkpoint: (
    claim: Claim,
    events: ReadonlyArray<S.WorkflowEvent>,
    write: Effect.Effect<Option.Option<number>>
  ) => Effect.Effect<Option.Option<number>, E>
}) => {
  const { claim, definition, execution, index, step, store } = options
  // A tap with a policy runs as andThen under it (its failures and timeouts are retried), and only its
  // last failure is what a tap's failure is: logged, the data passed on.
  const tapped = step.type === "andTap" && (retryOf(step) !== undefined || timeoutOf(step) !== undefined)
  const attempt = (
    n: number
  ) => (tapped ? Effect.as(options.run(n, { ...step, type: "andThen" }), options.data) : options.run(n))
  const policied = runWithPolicy({
    step,
    stepIndex: index,
    workflowId: definition.id,
    drained: options.drained,
    parks: options.parks,
    restored: index === execution.stepIndex ? retryStateOf(execution, index, step.id) : undefined,
    run: (n) =>
      inStepSpan(
        timed(step, attempt(n), (timeout) => stepFailure(step.id, timeout)),
        { definition, executionId: execution.id, step, index, attempt: n },
        options.recordContent
      ),
    commit: (retry) => {
      const event = retryEvent(execution, { from: step.id, stepType: step.type }, index, retry)
      return Effect.map(options.checkpoint(claim, [event], store.retry(claim, retry.state, event)), Option.isSome)
    }
  })
  if (!tapped) return policied
  return Effect.flatMap(policied, (outcome) => {
    if (Option.isNone(outcome) || Either.isRight(outcome.value) || outcome.value.left._tag !== "StepFailed") {
      return Effect.succeed(outcome)
    }
    const failure = outcome.value.left
    return Effect.as(
      Effect.logWarning(`tap step ${step.id} failed: ${failure.spanMessage ?? failure.message}`),
      Option.some(Either.right<unknown>(options.data))
    )
  })
}

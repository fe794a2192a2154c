import { Data, Duration, Effect, type Schedule } from "effect"
import type { Step, WorkflowDefinition } from "../Workflow.js"
import { innerStepsOf } from "./innerViews.js"

export type { RuntimeHooks, WorkflowHooks } from "./Hooks.js"

/**
 * Step policies (issue #31): `retry` and `timeout` on the steps that run user code. The retry loop
 * itself, which commits each attempt, is in PolicyRun.ts.
 */

/** A step's run that took longer than its `timeout`: its signal was aborted and its fiber interrupted. */
export class StepTimeout extends Data.TaggedError("StepTimeout")<{
  readonly stepId: string
  readonly timeoutMs: number
  readonly message: string
}> {}

/**
 * When a failed step runs again. `schedule` is stepped with each failure (the step's `E`, or a
 * `StepTimeout`); its delays are the back-offs, its end is the end of the retries. `while` decides per
 * failure (a defect, a throw or `Effect.die`, is retried only without `while`: it is not an `E`).
 */
export interface StepRetry<E> {
  readonly schedule: Schedule.Schedule<unknown, E | StepTimeout>
  readonly while?: ((error: E | StepTimeout) => boolean) | undefined
}

/** The policies a step that runs user code takes. */
export interface StepPolicy<E> {
  readonly retry?: StepRetry<E> | undefined
  /** How long one attempt may run; past it the attempt fails with `StepTimeout`. */
  readonly timeout?: Duration.DurationInput | undefined
}

/** What an andAgent's call may fail with: its tagged errors (NotFound, ValidationError, ExecutionFailed, AgentOutputInvalid). */
export type AgentCallError = { readonly _tag: string; readonly message: string }

/** The most attempts a step makes, whatever its schedule says (each failed one is committed). */
export const MAX_ATTEMPTS = 100
/** The longest back-off a retry waits (in memory; the due time is committed). */
export const MAX_RETRY_DELAY = Duration.days(1)
/** The longest `timeout` a step may have. */
export const MAX_TIMEOUT = Duration.days(7)

const PARKING_TYPES: ReadonlySet<string> = new Set(["andSleep", "andSleepUntil"])

/** Whether a step can park its execution: it sleeps, declares suspension, or is a child that has such a step. */
const canPark = (step: { readonly type: string; readonly [key: string]: unknown }): boolean => {
  if (PARKING_TYPES.has(step.type) || step.suspendSchema !== undefined || step.resumeSchema !== undefined) return true
  const nested = [step.step, ...(Array.isArray(step.steps) ? step.steps : [])]
  if (nested.some((one) => typeof one === "object" && one !== null && "type" in one && canPark(one as never))) {
    return true
  }
  return step.type === "andWorkflow" && childCanPark(step.workflow as WorkflowDefinition)
}

const childCanPark = (child: WorkflowDefinition): boolean =>
  child.suspendSchema !== undefined || child.resumeSchema !== undefined ||
  child.steps.some((step) => canPark(step as unknown as { readonly type: string }))

/** A `timeout` as given: a positive duration within MAX_TIMEOUT. */
const checkTimeout = (workflowId: string, stepId: string, input: unknown): void => {
  if (input === undefined) return
  const timeout = Duration.decodeUnknown(input)
  if (timeout._tag === "None" || !Duration.isFinite(timeout.value) || Duration.toMillis(timeout.value) <= 0) {
    throw new Error(`Workflow ${workflowId}, step ${stepId}: timeout must be a positive, finite duration`)
  }
  if (Duration.greaterThan(timeout.value, MAX_TIMEOUT)) {
    throw new Error(
      `Workflow ${workflowId}, step ${stepId}: timeout is over ${
        Duration.format(MAX_TIMEOUT)
      }, the most a step may have`
    )
  }
}

/** A `retry` as given: a schedule, and `while` a function when present. */
const checkRetry = (workflowId: string, stepId: string, retry: StepRetry<unknown> | undefined): void => {
  if (retry === undefined) return
  if (typeof retry !== "object" || retry === null || typeof retry.schedule?.step !== "function") {
    throw new Error(
      `Workflow ${workflowId}, step ${stepId}: retry must be { schedule: Schedule, while?: (error) => boolean }`
    )
  }
  if (retry.while !== undefined && typeof retry.while !== "function") {
    throw new Error(`Workflow ${workflowId}, step ${stepId}: retry.while must be a function`)
  }
}

/**
 * A step's policies as given, checked (the builder's checks throw): a `timeout` that is a positive
 * duration within MAX_TIMEOUT, never on an andWorkflow whose child can park (a timeout cannot run across
 * a parked child), and a `retry` with a schedule; the same for its inner steps (a child's are checked
 * when the child is defined).
 */
export const checkPolicy = (workflowId: string, step: Step): void => {
  if (step.type !== "andWorkflow") {
    for (const { step: one } of innerStepsOf(step)) {
      checkTimeout(workflowId, one.id, one.timeout)
      checkRetry(workflowId, one.id, one.retry)
    }
  }
  const policy = step as StepPolicy<unknown> & Step
  checkTimeout(workflowId, step.id, policy.timeout)
  checkRetry(workflowId, step.id, policy.retry)
  if (policy.timeout !== undefined) {
    if (step.type === "andWorkflow" && childCanPark(step.workflow)) {
      throw new Error(
        `Workflow ${workflowId}, step ${step.id}: timeout is not allowed on a child workflow that can park ` +
          `(${step.workflow.id} sleeps or suspends): the time it is parked is no running time`
      )
    }
    if (PARKING_TYPES.has(step.type)) {
      throw new Error(`Workflow ${workflowId}, step ${step.id}: timeout is not allowed on a ${step.type} step`)
    }
  }
}

export { canPark }

/** The timeout of a step as the runtime holds it, if any. */
export const timeoutOf = (
  step: { readonly timeout?: Duration.DurationInput | undefined }
): Duration.Duration | undefined => {
  const timeout = step.timeout
  return timeout === undefined ? undefined : Duration.decode(timeout)
}

/** The retry of a step (top-level or inner) as the runtime holds it, if any. */
export const retryOf = (step: StepPolicy<any>): StepRetry<unknown> | undefined => step.retry

/**
 * One attempt of `step`, bounded by its timeout: past it, the attempt's fiber is interrupted (its
 * signal aborts: runUserCode), whatever it answers later is dropped, and it fails with what `fail`
 * makes of a StepTimeout.
 */
export const timed = <A, E>(
  step: { readonly id: string; readonly timeout?: Duration.DurationInput | undefined },
  run: Effect.Effect<A, E>,
  fail: (timeout: StepTimeout) => E
): Effect.Effect<A, E> => {
  const timeout = timeoutOf(step)
  if (timeout === undefined) return run
  const timeoutMs = Duration.toMillis(timeout)
  return Effect.timeoutFail(run, {
    duration: timeout,
    onTimeout: () =>
      fail(new StepTimeout({ stepId: step.id, timeoutMs, message: `timed out after ${Duration.format(timeout)}` }))
  })
}

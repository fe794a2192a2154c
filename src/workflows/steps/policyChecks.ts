import { Duration } from "effect"
import type { Step, WorkflowDefinition } from "../definition/WorkflowDefinition.js"
import { innerStepsOf } from "./innerViews.js"
import { MAX_TIMEOUT, type StepPolicy, type StepRetry } from "./Policy.js"

/** Definition-time checks of the step policies (`retry`, `timeout`): the builder's, which throw. */

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
  // Checked as given (a definition from JavaScript may hold anything here).
  const given: unknown = retry
  const schedule: unknown = typeof given === "object" && given !== null && "schedule" in given
    ? given.schedule
    : undefined
  const holdsStep = (typeof schedule === "object" || typeof schedule === "function") && schedule !== null &&
    "step" in schedule && typeof schedule.step === "function"
  if (!holdsStep) {
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

import { Effect, Either, Option } from "effect"
import type { Visibility } from "../../auth/Ownership.js"
import { BadRequest, Conflict, NotFound } from "../../core/errors.js"
import type { ConcurrencyGate } from "../concurrency/ConcurrencyGate.js"
import type { WorkflowDefinition } from "../definition/WorkflowDefinition.js"
import { answersApprovals, approvalResumeData } from "../steps/agentApprovals.js"
import { continueAt, definitionHash, topStepOfPath } from "./DefinitionCompatibility.js"
import type { Execution, ExecutionStore } from "./ExecutionStore.js"
import type { Watch } from "./ExecutionWatch.js"
import { storedResumeData } from "./resumeData.js"
import { handedData } from "./StepCodec.js"
import { claimResumeRetrying } from "./storeRetry.js"

/**
 * Resuming a suspended execution: the step it resumes at (its own, by id when the workflow changed, or
 * the one asked for), its resume data checked and stored, then the claim and the launch as one action.
 */
export const makeExecutionResume = (deps: {
  readonly store: ExecutionStore["Type"]
  readonly gate: ConcurrencyGate
  readonly instanceId: string
  readonly settleAfter: Watch["settleAfter"]
  readonly findExecution: (
    workflowId: string,
    executionId: string,
    visibility?: Visibility
  ) => Effect.Effect<{ readonly definition: WorkflowDefinition; readonly execution: Execution }, NotFound>
}) => {
  const { findExecution, gate, instanceId, settleAfter, store } = deps
  const resume = (id: string, executionId: string, resumeData: unknown, stepId?: string, visibility?: Visibility) =>
    Effect.gen(function*() {
      const { definition, execution } = yield* findExecution(id, executionId, visibility)
      // The spec's 404, saying what the execution is now (a resume may have lost a race to a cancel).
      const notSuspended = (now: string | undefined) =>
        new NotFound({
          message: `Execution ${executionId} is not suspended (${
            now === undefined ? "it was deleted" : `it is ${now}`
          })`
        })
      if (execution.status !== "suspended" || execution.suspension === undefined) {
        return yield* notSuspended(execution.status)
      }
      // Its own step, by id when the workflow changed since (409 when gone); or the one asked for.
      const stepIndex = stepId === undefined
        ? yield* Either.mapLeft(
          Either.map(continueAt(definition, execution, execution.suspension), (at) => at.stepIndex),
          (incompatible) =>
            new Conflict({
              message:
                `Cannot resume: ${incompatible.message}; resume it at one of the workflow's steps (options.stepId) or cancel it`
            })
        )
        : definition.steps.findIndex((step) => step.id === topStepOfPath(stepId))
      if (stepIndex < 0) return yield* new BadRequest({ message: `Workflow ${id} has no step ${stepId}` })
      const schema = definition.steps[stepIndex].resumeSchema ?? definition.resumeSchema
      const stored = yield* (answersApprovals(definition.steps[stepIndex], execution.suspension)
        ? approvalResumeData(execution.suspension, resumeData)
        : storedResumeData(schema, resumeData))
      // Another step than the one it stopped at, or a changed definition: the data that step gets
      // came from another predecessor, and must fit the schema of the one before it (409 if not).
      const checked = definitionHash(definition) !== execution.definitionHash ||
        definition.steps[stepIndex].id !== topStepOfPath(execution.suspension.stepId)
      if (checked) {
        yield* Either.mapLeft(
          handedData(definition, stepIndex, execution.currentData),
          (message) => new Conflict({ message: `Cannot resume at step ${definition.steps[stepIndex].id}: ${message}` })
        )
      }
      // Claim and launch are one uninterruptible action: a claimed execution always has a fiber.
      return yield* settleAfter(
        executionId,
        execution.lastSeq,
        Effect.uninterruptible(Effect.gen(function*() {
          const claimed = yield* claimResumeRetrying(store, execution, {
            stepIndex,
            resumeData: stored,
            owner: instanceId,
            definitionHash: definitionHash(definition)
          })
          if (Option.isNone(claimed)) {
            return yield* notSuspended(Option.getOrUndefined(yield* store.get(executionId))?.status)
          }
          const fiber = yield* gate.resumed(definition, claimed.value, checked)
          return { execution: claimed.value, fiber }
        }))
      )
    })
  return { resume }
}

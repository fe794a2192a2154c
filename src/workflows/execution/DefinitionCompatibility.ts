import { Either } from "effect"
import { createHash } from "node:crypto"
import type { Step, WorkflowDefinition } from "../definition/Workflow.js"
import { loopIds } from "../steps/loopChecks.js"
import type { Execution, StoredEvent } from "./ExecutionRows.js"

/**
 * Whether an execution stored under one version of its workflow can go on under the definition
 * registered now. Each execution records the hash of its definition's top-level steps (ids and types,
 * in order). The checkpoint holds the next step's INDEX, so when the hash differs (or is unknown: rows
 * from before migration 0016) the execution goes on from the step with the same ID in the current
 * definition, wherever it now stands; when that id is gone it cannot go on (a 409 on resume, an error
 * on recovery) rather than run whichever step now has that index.
 */

const hashes = new WeakMap<WorkflowDefinition, string>()

/**
 * sha256 (hex) of the definition's step tree (issue #31, settled 6): `[[id, type], ...]` for steps
 * without inner steps, as before (so an execution of an unchanged definition of such steps keeps its
 * hash), `[id, type, [inner ids...]]` for the others (a child workflow's: its own tree's hash). An
 * execution recorded under another hash goes on by the id of the step it stood at, as any changed
 * definition does.
 */
export const definitionHash = (definition: WorkflowDefinition): string => {
  const known = hashes.get(definition)
  if (known !== undefined) return known
  const shape = JSON.stringify(definition.steps.map((step) => {
    const inner = innerShape(step)
    return inner === undefined ? [step.id, step.type] : [step.id, step.type, inner]
  }))
  const hash = createHash("sha256").update(shape).digest("hex")
  hashes.set(definition, hash)
  return hash
}

const innerShape = (step: Step): ReadonlyArray<string> | string | undefined => {
  switch (step.type) {
    case "andAll":
    case "andRace":
      return step.steps.map((inner) => inner.id)
    case "andWhen":
      return [step.step.id]
    case "andWorkflow":
      return definitionHash(step.workflow)
    case "andMap":
      return Object.keys(step.map)
    case "andForEach":
    case "andDoWhile":
    case "andDoUntil":
    case "andBranch":
      return loopIds(step)?.slice(1)
    case "andThen":
    case "andTap":
    case "andAgent":
    case "andSleep":
    case "andSleepUntil":
      return undefined
  }
}

/** The top-level step an inner path belongs to (`measure/upper`, `lines[3]`, `lines#items` → `measure`, `lines`). */
export const topStepOfPath = (path: string): string => path.split(/[[/#]/, 1)[0]

/** Why an execution cannot go on under the current definition (the client-facing message). */
export class IncompatibleDefinition {
  readonly _tag = "IncompatibleDefinition"
  constructor(readonly message: string) {}
}

/** Where the execution goes on in `definition`: the index of the step it stands at, and the hash to record. */
export interface Continuation {
  readonly stepIndex: number
  readonly definitionHash: string
}

/**
 * The step of the current definition an execution standing at `stepId` (index `stepIndex` in the
 * definition it recorded) goes on from. Same hash: the index as stored. Otherwise: the step with that
 * id, or IncompatibleDefinition when it is gone (or, `stepId` undefined, not known).
 */
export const continueAt = (
  definition: WorkflowDefinition,
  execution: Pick<Execution, "id" | "definitionHash">,
  at: { readonly stepIndex: number; readonly stepId: string | undefined }
): Either.Either<Continuation, IncompatibleDefinition> => {
  const hash = definitionHash(definition)
  if (execution.definitionHash === hash) return Either.right({ stepIndex: at.stepIndex, definitionHash: hash })
  const changed = execution.definitionHash === undefined
    ? `execution ${execution.id} predates the recording of workflow definitions`
    : `workflow ${definition.id} changed since execution ${execution.id} started`
  if (at.stepId === undefined) {
    return Either.left(new IncompatibleDefinition(`${changed}, and the step it was at is not known`))
  }
  const stepIndex = definition.steps.findIndex((step) => step.id === topStepOfPath(at.stepId!))
  if (stepIndex < 0) {
    return Either.left(
      new IncompatibleDefinition(
        `${changed}: its current step "${at.stepId}" is no longer in the workflow's definition`
      )
    )
  }
  return Either.right({ stepIndex, definitionHash: hash })
}

/**
 * The id of the step a running execution stands at (its stored `stepIndex`), from its latest events:
 * the step-start of that step, or the suspension it was resumed from. Undefined when neither is among
 * them (a resume to another step whose process died before the step started).
 */
export const runningStepId = (stepIndex: number, latest: ReadonlyArray<StoredEvent>): string | undefined => {
  for (let i = latest.length - 1; i >= 0; i--) {
    const { event } = latest[i]
    if ((event.type === "step-start" || event.type === "workflow-suspended") && event.stepIndex === stepIndex) {
      return topStepOfPath(event.from)
    }
    // An inner step's event (issue #31): the last events of a loop may all be its items'.
    if (event.path !== undefined && event.stepIndex === stepIndex) return topStepOfPath(event.path)
  }
  return undefined
}

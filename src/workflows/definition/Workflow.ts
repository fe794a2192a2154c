// src/workflows/definition: what a workflow is, before anything runs. workflow() and its typed builder
// (WorkflowChain), the runtime shape of a definition (WorkflowDefinition, StepContext) and the type
// helpers. It may import the steps' shapes and checks (steps/), schedules/codeSchedules and
// concurrency/Concurrency (the settings a definition holds); nothing of execution/, engine/ or api/.
import { checkDefinitionId } from "../../core/definitionId.js"
import type { ResultContext } from "../../core/userCode.js"
import { checkConcurrency, type WorkflowConcurrency } from "../concurrency/Concurrency.js"
import { checkCodeSchedules, type WorkflowSchedule } from "../schedules/codeSchedules.js"
import { checkAgentStep } from "../steps/agentStep.js"
import { loopIds, loopMethods } from "../steps/loopChecks.js"
import type { WorkflowHooks } from "../steps/Policy.js"
import { checkPolicy } from "../steps/policyChecks.js"
import { sleepMethods } from "../steps/Sleep.js"
import type { StepSpec } from "./StepContext.js"
import type { Next } from "./WorkflowChain.js"
import type { Step, WorkflowDefinition, WorkflowTypeId } from "./WorkflowDefinition.js"
import type { SchemaOf } from "./WorkflowTypes.js"

/**
 * `workflow(...)`, the builder's runtime side: each method checks its step and gives a new builder. Its
 * types are WorkflowChain.ts; the definition it builds is WorkflowDefinition.ts. The definition's types
 * are exported from here too, as the package has always had them.
 */

export {
  type Described,
  isSuspendSignal,
  type StepContext,
  type StepFn,
  type StepMeta,
  type StepSpec,
  SuspendSignal
} from "./StepContext.js"
export type {
  InnerStep,
  LastDataDoesNotFitResult,
  Next,
  WorkflowBuilder,
  WorkflowChain,
  WorkflowResumesId
} from "./WorkflowChain.js"
export {
  agentsOf,
  type Step,
  type StepType,
  type WorkflowDefinition,
  type WorkflowTypeId,
  type WorkflowVariance
} from "./WorkflowDefinition.js"
export type { AgentAnswer, AgentOutputSpec, AgentPrompt, InnerErrors, SchemaOf } from "./WorkflowTypes.js"

/** What `workflow(...)` takes. */
export interface WorkflowOptions<I, O, WRes, WSus> {
  readonly id: string
  readonly name: string
  readonly purpose: string
  readonly input: SchemaOf<I>
  readonly result: SchemaOf<O>
  /** The default `suspendSchema` of its steps. */
  readonly suspendSchema?: SchemaOf<WSus> | undefined
  /** The default `resumeSchema` of its steps. */
  readonly resumeSchema?: SchemaOf<WRes> | undefined
  /** Starts an execution at each time of a cron expression with `input` (issue #33): codeSchedules.ts. */
  readonly schedule?: WorkflowSchedule<I> | ReadonlyArray<WorkflowSchedule<I>> | undefined
  /** At most `limit` executions per key at once; the others queue, are rejected or interrupt (issue #33): concurrency/. */
  readonly concurrency?: WorkflowConcurrency<I> | undefined
}

/** The ids of a step and its inner steps. */
const idsOf = (step: Step): ReadonlyArray<string> =>
  step.type === "andAll" || step.type === "andRace"
    ? [step.id, ...step.steps.map((inner) => inner.id)]
    : step.type === "andWhen"
    ? [step.id, step.step.id]
    : loopIds(step) ?? [step.id]

interface Erased {
  readonly options: Omit<WorkflowDefinition, "steps" | typeof WorkflowTypeId>
  readonly steps: ReadonlyArray<Step>
}

// The chain is typed by its interfaces; at run time every builder is the same shape.
const build = (definition: Erased): any => {
  const add = (step: Step) => {
    checkPolicy(definition.options.id, step)
    const taken = new Set(definition.steps.flatMap(idsOf))
    const ids = idsOf(step)
    for (const [index, id] of ids.entries()) {
      checkDefinitionId("Step id", id)
      if (taken.has(id) || ids.indexOf(id) !== index) {
        throw new Error(`Workflow ${definition.options.id} has two steps with the id "${id}"`)
      }
    }
    return build({ ...definition, steps: [...definition.steps, step] })
  }
  return {
    ...definition.options,
    steps: definition.steps,
    andThen: (step: StepSpec) => add({ ...step, type: "andThen" }),
    andTap: (step: StepSpec) => add({ ...step, type: "andTap" }),
    andWhen: (step: Omit<Extract<Step, { type: "andWhen" }>, "type">) => add({ ...step, type: "andWhen" }),
    andAll: (step: Omit<Extract<Step, { type: "andAll" }>, "type">) => add({ ...step, type: "andAll" }),
    andRace: (step: Omit<Extract<Step, { type: "andRace" }>, "type">) => add({ ...step, type: "andRace" }),
    andAgent: (step: Omit<Extract<Step, { type: "andAgent" }>, "type">) =>
      add({ ...checkAgentStep(step), type: "andAgent" }),
    andWorkflow: (step: Omit<Extract<Step, { type: "andWorkflow" }>, "type">) => add({ ...step, type: "andWorkflow" }),
    ...sleepMethods(add),
    ...loopMethods(add)
  }
}

/**
 * Starts a workflow definition; add steps with `.andThen(...)` and friends. Each step's `data` is the
 * previous step's output, typed; the chain is a definition once its last data fits `result`.
 */
export const workflow = <I, O, WRes = unknown, WSus = unknown, HS = void, HP = void, HF = void, HE = void>(
  options: WorkflowOptions<I, O, WRes, WSus> & WorkflowHooks<I, O, HS, HP, HF, HE>
): Next<I, O, I, {}, ResultContext<HS> | ResultContext<HP> | ResultContext<HF> | ResultContext<HE>, WRes, WSus> => {
  checkDefinitionId("Workflow id", options.id)
  checkCodeSchedules(options.id, options.schedule)
  checkConcurrency(options.id, options.concurrency)
  return build({ options, steps: [] })
}

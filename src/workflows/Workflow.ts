import { Data, type Schema } from "effect"
import { checkDefinitionId } from "../core/definitionId.js"
import type { UserResult } from "../core/userCode.js"

/** Thrown (or failed/died with) by `suspend`: the execution parks at the current step. */
export class SuspendSignal extends Data.TaggedError("SuspendSignal")<{
  readonly reason: string
  readonly data: unknown
}> {}

export const isSuspendSignal = (value: unknown): value is SuspendSignal => value instanceof SuspendSignal

/** What a step sees. */
export interface StepContext<Data = unknown, Input = unknown> {
  /** The previous step's output (the workflow input for the first step). */
  readonly data: Data
  /** The workflow's input. */
  readonly input: Input
  /** The caller's `options.context`. */
  readonly context: Readonly<Record<string, unknown>>
  /** The user who started the execution, or null. */
  readonly user: unknown
  /** The id of the user the execution belongs to (the caller's under authentication), if any. */
  readonly userId: string | undefined
  readonly executionId: string
  /** The output of an earlier step, by id. */
  readonly getStepData: (stepId: string) => unknown
  /** Parks the execution here; on resume this step runs again with `resumeData`. Never returns. */
  readonly suspend: (reason: string, data?: unknown) => never
  /** The data the execution was resumed with, when this step is the one being resumed. */
  readonly resumeData: unknown
  /** Aborted when the step is interrupted (suspend, cancel, race lost, shutdown). */
  readonly signal: AbortSignal
}

export type StepFn<A = unknown> = (context: StepContext<any, any>) => UserResult<A>

interface StepMeta {
  readonly id: string
  readonly name?: string | undefined
  readonly purpose?: string | undefined
  readonly inputSchema?: Schema.Schema.Any | undefined
  readonly outputSchema?: Schema.Schema.Any | undefined
  readonly suspendSchema?: Schema.Schema.Any | undefined
  readonly resumeSchema?: Schema.Schema.Any | undefined
}

/** A plain step: `execute` gets the context and returns the output. */
export interface StepSpec extends StepMeta {
  readonly execute: StepFn
}

export type Step =
  | (StepSpec & { readonly type: "andThen" })
  | (StepSpec & { readonly type: "andTap" })
  | (StepMeta & { readonly type: "andWhen"; readonly condition: (context: StepContext<any, any>) => boolean | PromiseLike<boolean>; readonly step: StepSpec })
  | (StepMeta & { readonly type: "andAll"; readonly steps: ReadonlyArray<StepSpec> })
  | (StepMeta & { readonly type: "andRace"; readonly steps: ReadonlyArray<StepSpec> })
  | (StepMeta & {
    readonly type: "andAgent"
    readonly agent: string
    readonly prompt: (context: StepContext<any, any>) => string | PromiseLike<string>
    /** JSON Schema of the object the agent must answer with; text when absent. */
    readonly output?: Record<string, unknown> | undefined
  })
  | (StepMeta & {
    readonly type: "andWorkflow"
    readonly workflow: WorkflowDefinition
    readonly input?: ((context: StepContext<any, any>) => unknown) | undefined
  })

export type StepType = Step["type"]

export interface WorkflowDefinition {
  readonly id: string
  readonly name: string
  readonly purpose: string
  readonly input: Schema.Schema.Any
  readonly result: Schema.Schema.Any
  readonly suspendSchema?: Schema.Schema.Any | undefined
  readonly resumeSchema?: Schema.Schema.Any | undefined
  readonly steps: ReadonlyArray<Step>
}

/** The chainable builder: each `and*` returns a new builder with the step appended. */
export interface WorkflowBuilder extends WorkflowDefinition {
  readonly andThen: (step: StepSpec) => WorkflowBuilder
  readonly andTap: (step: StepSpec) => WorkflowBuilder
  readonly andWhen: (step: StepMeta & { condition: (context: StepContext<any, any>) => boolean | PromiseLike<boolean>; step: StepSpec }) => WorkflowBuilder
  readonly andAll: (step: StepMeta & { steps: ReadonlyArray<StepSpec> }) => WorkflowBuilder
  readonly andRace: (step: StepMeta & { steps: ReadonlyArray<StepSpec> }) => WorkflowBuilder
  readonly andAgent: (step: StepMeta & { agent: string; prompt: (context: StepContext<any, any>) => string | PromiseLike<string>; output?: Record<string, unknown> }) => WorkflowBuilder
  readonly andWorkflow: (step: StepMeta & { workflow: WorkflowDefinition; input?: (context: StepContext<any, any>) => unknown }) => WorkflowBuilder
}

const build = (definition: WorkflowDefinition): WorkflowBuilder => {
  const add = (step: Step): WorkflowBuilder => {
    checkDefinitionId("Step id", step.id)
    if (definition.steps.some((existing) => existing.id === step.id)) {
      throw new Error(`Workflow ${definition.id} has two steps with the id "${step.id}"`)
    }
    return build({ ...definition, steps: [...definition.steps, step] })
  }
  return {
    ...definition,
    andThen: (step) => add({ ...step, type: "andThen" }),
    andTap: (step) => add({ ...step, type: "andTap" }),
    andWhen: (step) => add({ ...step, type: "andWhen" }),
    andAll: (step) => add({ ...step, type: "andAll" }),
    andRace: (step) => add({ ...step, type: "andRace" }),
    andAgent: (step) => add({ ...step, type: "andAgent" }),
    andWorkflow: (step) => add({ ...step, type: "andWorkflow" })
  }
}

/** Starts a workflow definition; add steps with `.andThen(...)` and friends. */
export const workflow = (options: Omit<WorkflowDefinition, "steps">): WorkflowBuilder => {
  checkDefinitionId("Workflow id", options.id)
  return build({ ...options, steps: [] })
}

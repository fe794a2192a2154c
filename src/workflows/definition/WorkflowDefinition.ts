import type { Schema } from "effect"
import type { AgentDefinition } from "../../agents/Agent.js"
import type { JsonSchemaInput } from "../../agents/AgentOutput.js"
import type { UserResult } from "../../core/userCode.js"
import type { WorkflowConcurrency } from "../concurrency/Concurrency.js"
import type { WorkflowSchedule } from "../schedules/codeSchedules.js"
import type { RuntimeHooks } from "../steps/Hooks.js"
import type { LoopStep } from "../steps/Loops.js"
import type { SleepStepFields } from "../steps/Sleep.js"
import type { StepContext, StepMeta, StepSpec } from "./StepContext.js"

/** A definition as the runtime holds it: its steps with the builder's types erased, and its brand. */

/** A step of a definition, as the runtime holds it (the builder's types are erased here). */
export type Step =
  | (StepSpec & { readonly type: "andThen" })
  | (StepSpec & { readonly type: "andTap" })
  | (StepMeta & {
    readonly type: "andWhen"
    readonly condition: (context: StepContext<any, any, any, any, any>) => UserResult<boolean>
    readonly step: StepSpec
  })
  | (StepMeta & { readonly type: "andAll"; readonly steps: ReadonlyArray<StepSpec> })
  | (StepMeta & { readonly type: "andRace"; readonly steps: ReadonlyArray<StepSpec> })
  | (StepMeta & {
    readonly type: "andAgent"
    /**
     * The agent itself (registered with the app's agents when the layer builds, bound to its context
     * there: held erased, as step code is); called by its id.
     */
    readonly agent: AgentDefinition
    readonly prompt: (context: StepContext<any, any, any, any, any>) => UserResult<string>
    /**
     * What the agent must answer with: an Effect Schema (its answer decoded) or a JSON Schema (its
     * object as is); its text when absent.
     */
    readonly output?: Schema.Schema.AnyNoContext | JsonSchemaInput | undefined
    /** Turns the answer into the step's output, with the step's context. */
    readonly map?: ((out: any, context: StepContext<any, any, any, any, any>) => UserResult<unknown>) | undefined
  })
  | (StepMeta & {
    readonly type: "andWorkflow"
    readonly workflow: WorkflowDefinition
    readonly input?: ((context: StepContext<any, any, any, any, any>) => UserResult<unknown>) | undefined
  })
  | LoopStep
  | (StepMeta & SleepStepFields)

export type StepType = Step["type"]

export declare const WorkflowTypeId: unique symbol

/** The types a definition carries, for the compiler only: what it takes (`I`), gives (`O`) and requires (`R`). */
export interface WorkflowVariance<in I, out O, out R> {
  readonly _I: (input: I) => void
  readonly _O: () => O
  readonly _R: () => R
}

/**
 * A finished workflow: its last step's data fits `result`. `R` is what its steps require (`never`
 * when nothing). The schemas are held erased; their types are in the brand.
 */
export interface WorkflowDefinition<in I = any, out O = any, out R = never> extends RuntimeHooks {
  readonly [WorkflowTypeId]: WorkflowVariance<I, O, R>
  readonly id: string
  readonly name: string
  readonly purpose: string
  readonly input: Schema.Schema.AnyNoContext
  readonly result: Schema.Schema.AnyNoContext
  readonly suspendSchema?: Schema.Schema.AnyNoContext | undefined
  readonly resumeSchema?: Schema.Schema.AnyNoContext | undefined
  readonly steps: ReadonlyArray<Step>
  readonly schedule?: WorkflowSchedule<any> | ReadonlyArray<WorkflowSchedule<any>> | undefined
  readonly concurrency?: WorkflowConcurrency<any> | undefined
}

/** The agents a workflow's andAgent steps call, its sub-workflows' included (registered with the app's). */
export const agentsOf = (definition: WorkflowDefinition): ReadonlyArray<AgentDefinition> =>
  definition.steps.flatMap((step) =>
    step.type === "andAgent" ? [step.agent] : step.type === "andWorkflow" ? agentsOf(step.workflow) : []
  )

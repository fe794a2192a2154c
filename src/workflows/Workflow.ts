import { Data, type Effect, type Schema } from "effect"
import type { AgentDefinition } from "../agents/Agent.js"
import type { JsonSchemaInput, OutputSchema } from "../agents/AgentOutput.js"
import { checkDefinitionId } from "../core/definitionId.js"
import type { ResultError, UserResult } from "../core/userCode.js"
import { checkConcurrency, type WorkflowConcurrency } from "./concurrency/Concurrency.js"
import { checkCodeSchedules, type WorkflowSchedule } from "./schedules/codeSchedules.js"
import type { ApprovalAnswers } from "./steps/agentApprovals.js"
import { checkAgentStep } from "./steps/agentStep.js"
import { loopIds, loopMethods } from "./steps/loopChecks.js"
import type { LoopsChain, LoopStep } from "./steps/Loops.js"
import {
  type AgentCallError,
  checkPolicy,
  type RuntimeHooks,
  type StepPolicy,
  type WorkflowHooks
} from "./steps/Policy.js"
import { type SleepChain, sleepMethods, type SleepStepFields } from "./steps/Sleep.js"
import type {
  AllOutput,
  InnerError,
  InnerOutput,
  ResultContext,
  ResultValue,
  SchemaOf,
  SuspendFn,
  WithInner,
  WithStep,
  WithWhen
} from "./WorkflowTypes.js"

export type { SchemaOf } from "./WorkflowTypes.js"

/** Thrown (or failed/died with) by `suspend`: the execution parks at the current step. */
export class SuspendSignal extends Data.TaggedError("SuspendSignal")<{
  readonly reason: string
  readonly data: unknown
  /** Where it suspended, when inside a step (issue #31: `notify/send`, `lines[3]`). */
  readonly path?: string | undefined
  /** When the suspension ends by itself (an andAgent step's approvals expire: steps/agentApprovals.ts). */
  readonly wakeAt?: string | undefined
}> {}

export const isSuspendSignal = (value: unknown): value is SuspendSignal => value instanceof SuspendSignal

/**
 * What a step sees. `Steps` is the record of earlier steps' outputs by id; `Resume` the type of its
 * `resumeSchema` (or the workflow's); `Suspend` that of its `suspendSchema` (or the workflow's).
 */
export interface StepContext<
  Data = unknown,
  Input = unknown,
  Steps = Readonly<Record<string, unknown>>,
  Resume = unknown,
  Suspend = unknown
> {
  /** The previous step's output (the workflow input for the first step). */
  readonly data: Data
  /** The workflow's input. */
  readonly input: Input
  /**
   * The output of every earlier step, by id: the top-level ones, andAll's inner ones, andRace's and
   * andWhen's inner ones (undefined when they did not run or lost). A child workflow's steps are not here.
   */
  readonly steps: Steps
  /** The caller's `options.context`. */
  readonly context: Readonly<Record<string, unknown>>
  /** The user who started the execution, or null. */
  readonly user: unknown
  /** The id of the user the execution belongs to (the caller's under authentication), if any. */
  readonly userId: string | undefined
  readonly executionId: string
  /**
   * The output of an earlier step, by id.
   * @deprecated Use `steps["id"]`, which is typed; `getStepData` goes in the next release.
   */
  readonly getStepData: (stepId: string) => unknown
  /**
   * Parks the execution here; on resume this step runs again with `resumeData`. Never returns. With a
   * `suspendSchema`, `data` is required, checked against it and at most 64 KiB of JSON.
   */
  readonly suspend: SuspendFn<Suspend>
  /** The data the execution was resumed with (decoded by `resumeSchema`), when this step is the one being resumed. */
  readonly resumeData: Resume | undefined
  /** Aborted when the step is interrupted (suspend, cancel, race lost, shutdown, timeout). */
  readonly signal: AbortSignal
  /** Its id, `outer/inner` (inner step), `parent/step` (child): with `executionId`, an idempotency key. */
  readonly path: string
  /** Which attempt of the step this is (1-based; more than 1 under a retry policy). */
  readonly attempt: number
}

/** A step's function as the runtime holds it. */
export type StepFn<A = unknown> = (context: StepContext<any, any, any, any, any>) => UserResult<A>

/** Its policies (steps/Policy.ts) are held with the types erased. */
export interface StepMeta extends StepPolicy<any> {
  readonly id: string
  readonly name?: string | undefined
  readonly purpose?: string | undefined
  readonly inputSchema?: Schema.Schema.AnyNoContext | undefined
  readonly outputSchema?: Schema.Schema.AnyNoContext | undefined
  readonly suspendSchema?: Schema.Schema.AnyNoContext | undefined
  readonly resumeSchema?: Schema.Schema.AnyNoContext | undefined
}

/** A plain step as the runtime holds it: `execute` gets the context and returns the output. */
export interface StepSpec extends StepMeta {
  readonly execute: StepFn
}

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

/** The key of a builder's phantom record of resume types (see `WorkflowChain`). */
export declare const WorkflowResumesId: unique symbol

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

/** The optional descriptive fields of a step. */
export interface Described {
  readonly name?: string | undefined
  readonly purpose?: string | undefined
  /** Shown in /workflows/:id; not enforced. */
  readonly inputSchema?: Schema.Schema.AnyNoContext | undefined
  /** The output is checked against it (andThen). */
  readonly outputSchema?: Schema.Schema.AnyNoContext | undefined
}

/**
 * An inner step of andAll/andRace, seeing the context `Ctx` (its suspension and resume are the outer step's). Its
 * `retry.while` sees `unknown`: TypeScript cannot type it by each step of a tuple while it infers the tuple.
 */
export interface InnerStep<Ctx> extends Described, StepPolicy<unknown> {
  readonly id: string
  readonly execute: (context: Ctx) => unknown
}

/**
 * The chain's methods, shared by finished and unfinished builders. `Rs` is, for the compiler only, the
 * union of `readonly [stepId, ResumeType]` of its top-level steps (what `resumeWorkflow` types `data` by).
 */
export interface WorkflowChain<in out I, in out O, out D, out S, out R, in out WRes, in out WSus, Rs = never>
  extends SleepChain<I, O, D, S, R, WRes, WSus, Rs>, LoopsChain<I, O, D, S, R, WRes, WSus, Rs>
{
  // A method's parameter, so bivariant: it never decides whether one builder is assignable to another
  // (a builder grown in a loop keeps its type), it only lets `resumeWorkflow` read it.
  [WorkflowResumesId]?(resumes: Rs): void
  /** Its output is the next data. */
  readonly andThen: <Id extends string, Ret, Res = WRes, Sus = WSus>(
    step: Described & StepPolicy<ResultError<Ret>> & {
      readonly id: Id
      readonly resumeSchema?: SchemaOf<Res> | undefined
      readonly suspendSchema?: SchemaOf<Sus> | undefined
      readonly execute: (context: StepContext<D, I, S, Res, Sus>) => Ret
    }
  ) => Next<
    I,
    O,
    ResultValue<Ret>,
    WithStep<S, Id, ResultValue<Ret>>,
    R | ResultContext<Ret>,
    WRes,
    WSus,
    Rs | readonly [Id, Res]
  >
  /** Runs for its effect; the data goes on unchanged (a failure is logged, not fatal). */
  readonly andTap: <Id extends string, Ret, Res = WRes, Sus = WSus>(
    step: Described & StepPolicy<ResultError<Ret>> & {
      readonly id: Id
      readonly resumeSchema?: SchemaOf<Res> | undefined
      readonly suspendSchema?: SchemaOf<Sus> | undefined
      readonly execute: (context: StepContext<D, I, S, Res, Sus>) => Ret
    }
  ) => Next<I, O, D, WithStep<S, Id, D>, R | ResultContext<Ret>, WRes, WSus, Rs | readonly [Id, Res]>
  /** Runs `step` when `condition` holds: the data is then its output, else unchanged. */
  readonly andWhen: <Id extends string, InnerId extends string, Ret, Cond extends Condition, Res = WRes, Sus = WSus>(
    step: Described & StepPolicy<ResultError<Ret> | ResultError<Cond>> & {
      readonly id: Id
      readonly resumeSchema?: SchemaOf<Res> | undefined
      readonly suspendSchema?: SchemaOf<Sus> | undefined
      readonly condition: (context: StepContext<D, I, S, Res, Sus>) => Cond
      readonly step: Described & StepPolicy<ResultError<Ret>> & {
        readonly id: InnerId
        readonly execute: (context: StepContext<D, I, S, Res, Sus>) => Ret
      }
    }
  ) => Next<
    I,
    O,
    D | ResultValue<Ret>,
    WithWhen<S, Id, InnerId, D, ResultValue<Ret>>,
    R | ResultContext<Ret> | ResultContext<Cond>,
    WRes,
    WSus,
    Rs | readonly [Id, Res]
  >
  /** Runs its steps concurrently on the same data: the next data is the tuple of their outputs. */
  readonly andAll: <
    Id extends string,
    const T extends ReadonlyArray<InnerStep<StepContext<D, I, S, Res, Sus>>>,
    Res = WRes,
    Sus = WSus
  >(
    step: Described & {
      readonly id: Id
      readonly resumeSchema?: SchemaOf<Res> | undefined
      readonly suspendSchema?: SchemaOf<Sus> | undefined
      readonly steps: T
    }
  ) => Next<
    I,
    O,
    AllOutput<T>,
    WithInner<S, Id, AllOutput<T>, T, never>,
    R | InnerContext<T>,
    WRes,
    WSus,
    Rs | readonly [Id, Res]
  >
  /** Runs its steps concurrently: the first to finish gives the next data, the others are interrupted. */
  readonly andRace: <
    Id extends string,
    const T extends ReadonlyArray<InnerStep<StepContext<D, I, S, Res, Sus>>>,
    Res = WRes,
    Sus = WSus
  >(
    step: Described & {
      readonly id: Id
      readonly resumeSchema?: SchemaOf<Res> | undefined
      readonly suspendSchema?: SchemaOf<Sus> | undefined
      readonly steps: T
    }
  ) => Next<
    I,
    O,
    InnerOutput<T[number]>,
    WithInner<S, Id, InnerOutput<T[number]>, T, undefined>,
    R | InnerContext<T>,
    WRes,
    WSus,
    Rs | readonly [Id, Res]
  >
  /**
   * Asks an agent (the object; it is registered with the app when the layer builds): the next data is
   * its text, or with `output` an Effect Schema's type (the answer decoded; a JSON Schema gives
   * `unknown`), or what `map(answer, context)` returns.
   */
  readonly andAgent: <
    Id extends string,
    P extends AgentPrompt,
    Out extends AgentOutputSpec = undefined,
    Ret = AgentAnswer<Out>,
    AR = never
  >(
    step: Described & StepPolicy<AgentCallError | ResultError<P> | ResultError<Ret>> & {
      readonly id: Id
      readonly agent: AgentDefinition<AR>
      readonly prompt: (context: StepContext<D, I, S, WRes, WSus>) => P
      readonly output?: Out
      readonly map?: (out: AgentAnswer<Out>, context: StepContext<D, I, S, WRes, WSus>) => Ret
    }
  ) => Next<
    I,
    O,
    ResultValue<Ret>,
    WithStep<S, Id, ResultValue<Ret>>,
    R | AR | ResultContext<P> | ResultContext<Ret>,
    WRes,
    WSus,
    Rs | readonly [Id, WRes | ApprovalAnswers]
  >
  /**
   * Runs another workflow inline: the next data is its result. Its input is the data, or what `input`
   * returns; either must fit the child's input type.
   */
  readonly andWorkflow: {
    <Id extends string, CO, CR>(
      step: Described & StepPolicy<unknown> & {
        readonly id: Id
        readonly resumeSchema?: SchemaOf<WRes> | undefined
        readonly workflow: WorkflowDefinition<D, CO, CR>
        readonly input?: undefined
      }
    ): Next<I, O, CO, WithStep<S, Id, CO>, R | CR, WRes, WSus, Rs | readonly [Id, WRes]>
    <Id extends string, CO, CR, X, XR = never>(
      step: Described & StepPolicy<unknown> & {
        readonly id: Id
        readonly resumeSchema?: SchemaOf<WRes> | undefined
        readonly workflow: WorkflowDefinition<X, CO, CR>
        readonly input: (
          context: StepContext<D, I, S, WRes, WSus>
        ) => X | PromiseLike<X> | Effect.Effect<X, unknown, XR>
      }
    ): Next<I, O, CO, WithStep<S, Id, CO>, R | CR | XR, WRes, WSus, Rs | readonly [Id, WRes]>
  }
}

/** What an andAgent's prompt returns: the text, as a value, a Promise or an Effect. */
export type AgentPrompt = string | PromiseLike<string> | Effect.Effect<string, any, any>

/** What an andAgent's `output` may be: an Effect Schema, a JSON Schema, or nothing (text). */
export type AgentOutputSpec = OutputSchema<any> | JsonSchemaInput | undefined

/** The agent's answer for an `output`: the Schema's type, `unknown` for a JSON Schema, the text without one. */
export type AgentAnswer<Out> = [Out] extends [undefined] ? string
  : Out extends Schema.Schema<infer A, infer _I, infer _R> ? A
  : unknown

/** What `andWhen`'s condition may return. */
type Condition = boolean | PromiseLike<boolean> | Effect.Effect<boolean, unknown, unknown>

type InnerContext<T extends ReadonlyArray<unknown>> = T[number] extends infer U
  ? U extends { readonly execute: (...args: never) => infer Ret } ? ResultContext<Ret> : never
  : never

/** The errors an inner step's `execute` may fail with (each step's `E` is kept on its type). */
export type InnerErrors<T extends ReadonlyArray<unknown>> = InnerError<T[number]>

/** A builder whose last data fits `result`: a definition, and more steps may follow. */
export interface WorkflowBuilder<
  in out I,
  in out O,
  out D,
  out S,
  out R = never,
  in out WRes = unknown,
  in out WSus = unknown,
  Rs = never
> extends WorkflowChain<I, O, D, S, R, WRes, WSus, Rs>, WorkflowDefinition<I, O, R> {}

/**
 * A builder whose last data does not fit `result` (yet): more steps may follow, but it is no
 * definition, so registering it (defineApp, andWorkflow) does not compile. `Data` is its last data.
 */
export interface LastDataDoesNotFitResult<
  out Data,
  in out Result,
  in out I,
  out S,
  out R = never,
  in out WRes = unknown,
  in out WSus = unknown,
  Rs = never
> extends WorkflowChain<I, Result, Data, S, R, WRes, WSus, Rs> {
  readonly id: string
  readonly steps: ReadonlyArray<Step>
}

/** The builder after a step whose output is `D`. */
export type Next<I, O, D, S, R, WRes, WSus, Rs = never> = [D] extends [O] ?
  WorkflowBuilder<I, O, D, S, R, WRes, WSus, Rs>
  : LastDataDoesNotFitResult<D, O, I, S, R, WRes, WSus, Rs>

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

/** The agents a workflow's andAgent steps call, its sub-workflows' included (registered with the app's). */
export const agentsOf = (definition: WorkflowDefinition): ReadonlyArray<AgentDefinition> =>
  definition.steps.flatMap((step) =>
    step.type === "andAgent" ? [step.agent] : step.type === "andWorkflow" ? agentsOf(step.workflow) : []
  )

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

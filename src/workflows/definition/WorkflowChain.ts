import type { Duration, Effect } from "effect"
import type { AgentDefinition } from "../../agents/Agent.js"
import type { ResultError } from "../../core/userCode.js"
import type { ApprovalAnswers } from "../steps/agentApprovals.js"
import type {
  Branch,
  BranchOutput,
  BranchRequires,
  Items,
  ItemStepContext,
  IterationContext,
  LoopResult,
  MapOutput,
  MapRequires,
  Suspending
} from "../steps/Loops.js"
import type { AgentCallError, StepPolicy } from "../steps/Policy.js"
import type { SleepDateResult, SleepDurationResult } from "../steps/Sleep.js"
import type { Described, StepContext } from "./StepContext.js"
import type { Step, WorkflowDefinition } from "./WorkflowDefinition.js"
import type {
  AgentAnswer,
  AgentOutputSpec,
  AgentPrompt,
  AllOutput,
  Condition,
  InnerContext,
  InnerOutput,
  ResultContext,
  ResultValue,
  SchemaOf,
  WithInner,
  WithStep,
  WithWhen
} from "./WorkflowTypes.js"

/**
 * The typed builder: the signature of every method of the chain and the builder each one gives (`Next`).
 * They refer to one another, so they live together; the runtime side is Workflow.ts and each step's module.
 */

/** The key of a builder's phantom record of resume types (see `WorkflowChain`). */
export declare const WorkflowResumesId: unique symbol

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

interface SleepDescribed<Id extends string> {
  readonly id: Id
  readonly name?: string | undefined
  readonly purpose?: string | undefined
}

/** The sleep methods of the builder (WorkflowChain extends this). The data goes on unchanged. */
export interface SleepChain<in out I, in out O, out D, out S, out R, in out WRes, in out WSus, Rs = never> {
  /**
   * Waits `duration` (at most 366 days), durably: the execution holds no fiber meanwhile, and wakes at
   * the committed time after a crash or restart. A function is evaluated once, when the step is entered.
   */
  readonly andSleep: {
    <Id extends string>(step: SleepDescribed<Id> & { readonly duration: Duration.DurationInput }): Next<
      I,
      O,
      D,
      WithStep<S, Id, D>,
      R,
      WRes,
      WSus,
      Rs | readonly [Id, WRes]
    >
    <Id extends string, Ret extends SleepDurationResult>(
      step: SleepDescribed<Id> & {
        readonly duration: (context: StepContext<D, I, S, WRes, WSus>) => Ret
      }
    ): Next<I, O, D, WithStep<S, Id, D>, R | ResultContext<Ret>, WRes, WSus, Rs | readonly [Id, WRes]>
  }
  /**
   * Waits until `date` (a `Date` or an ISO 8601 string, at most 366 days ahead), durably; a date in the
   * past goes on at once. A function is evaluated once, when the step is entered.
   */
  readonly andSleepUntil: {
    <Id extends string>(step: SleepDescribed<Id> & { readonly date: Date | string }): Next<
      I,
      O,
      D,
      WithStep<S, Id, D>,
      R,
      WRes,
      WSus,
      Rs | readonly [Id, WRes]
    >
    <Id extends string, Ret extends SleepDateResult>(
      step: SleepDescribed<Id> & {
        readonly date: (context: StepContext<D, I, S, WRes, WSus>) => Ret
      }
    ): Next<I, O, D, WithStep<S, Id, D>, R | ResultContext<Ret>, WRes, WSus, Rs | readonly [Id, WRes]>
  }
}

/** The loop and branch methods of the builder (WorkflowChain extends it). */
export interface LoopsChain<in out I, in out O, out D, out S, out R, in out WRes, in out WSus, Rs = never> {
  /**
   * Runs `step` on each item `items` gives (evaluated once and committed first): the next data is the
   * array of its outputs in item order. Each item's output is committed as it completes; at most
   * `concurrency` (default 1, at most 64) run at once; at most 10,000 items.
   */
  readonly andForEach: <Id extends string, InnerId extends string, Item, Ret, IR = never, Res = WRes, Sus = WSus>(
    step: Described & Suspending<Res, Sus> & {
      readonly id: Id
      readonly items: (context: StepContext<D, I, S, Res, Sus>) => Items<Item, IR>
      readonly concurrency?: number | undefined
      readonly step: Described & StepPolicy<ResultError<Ret>> & {
        readonly id: InnerId
        readonly execute: (context: ItemStepContext<Item, I, S, Res, Sus>) => Ret
      }
    }
  ) => Next<
    I,
    O,
    Array<ResultValue<Ret>>,
    WithStep<S, Id, Array<ResultValue<Ret>>>,
    R | IR | ResultContext<Ret>,
    WRes,
    WSus,
    Rs | readonly [Id, Res]
  >
  /**
   * Runs `step` (on the data, then on its previous output) as long as `condition` holds for the
   * iteration's output: the next data is the last iteration's output. Each iteration is committed;
   * past `maxIterations` (default 1,000, at most 100,000) the step fails.
   */
  readonly andDoWhile: LoopMethod<I, O, D, S, R, WRes, WSus, Rs>
  /** andDoWhile until `condition` holds. */
  readonly andDoUntil: LoopMethod<I, O, D, S, R, WRes, WSus, Rs>
  /**
   * Evaluates every branch's condition once (committed), then runs the matching branches' steps
   * concurrently: the next data has one entry per branch, its output or undefined. At most 32 branches.
   */
  readonly andBranch: <
    Id extends string,
    const B extends ReadonlyArray<Branch<StepContext<D, I, S, Res, Sus>>>,
    Res = WRes,
    Sus = WSus
  >(
    step: Described & Suspending<Res, Sus> & { readonly id: Id; readonly branches: B }
  ) => Next<
    I,
    O,
    BranchOutput<B>,
    WithStep<S, Id, BranchOutput<B>>,
    R | BranchRequires<B>,
    WRes,
    WSus,
    Rs | readonly [Id, Res]
  >
  /** The object of each key's value (`map`'s functions, 16 at a time; at most 64 keys), committed once. */
  readonly andMap: <
    Id extends string,
    const M extends Readonly<Record<string, (context: StepContext<D, I, S, Res, Sus>) => unknown>>,
    Res = WRes,
    Sus = WSus
  >(
    step: Described & Suspending<Res, Sus> & { readonly id: Id; readonly map: M }
  ) => Next<I, O, MapOutput<M>, WithStep<S, Id, MapOutput<M>>, R | MapRequires<M>, WRes, WSus, Rs | readonly [Id, Res]>
}

type LoopMethod<I, O, D, S, R, WRes, WSus, Rs> = <
  Id extends string,
  InnerId extends string,
  Ret extends LoopResult<D>,
  Cond extends Condition,
  Res = WRes,
  Sus = WSus
>(
  step: Described & Suspending<Res, Sus> & {
    readonly id: Id
    readonly maxIterations?: number | undefined
    readonly step: Described & StepPolicy<ResultError<Ret>> & {
      readonly id: InnerId
      readonly execute: (context: StepContext<D, I, S, Res, Sus> & IterationContext) => Ret
    }
    readonly condition: (context: StepContext<ResultValue<Ret>, I, S, Res, Sus> & IterationContext) => Cond
  }
) => Next<
  I,
  O,
  ResultValue<Ret>,
  WithStep<S, Id, ResultValue<Ret>>,
  R | ResultContext<Ret> | ResultContext<Cond>,
  WRes,
  WSus,
  Rs | readonly [Id, Res]
>

import type { Effect } from "effect"
import type { UserResult } from "../../core/userCode.js"
import type { Described, Next, StepContext, StepMeta, StepSpec } from "../Workflow.js"
import type { ResultContext, ResultError, ResultValue, SchemaOf, WithStep } from "../WorkflowTypes.js"
import type { StepPolicy } from "./Policy.js"

/** Issue #31's loop and branch steps: their types (LoopsChain) and their runtime shapes (LoopStep). */

/** The bounds of loops and branches (docs/decisions.md). */
export const LOOP_BOUNDS = {
  items: 10_000,
  concurrency: 64,
  maxIterations: 100_000,
  defaultMaxIterations: 1_000,
  branches: 32,
  mapKeys: 64,
  mapConcurrency: 16,
  itemBytes: 1024 * 1024,
  outputBytes: 16 * 1024 * 1024
} as const

type AnyContext = StepContext<any, any, any, any, any>

/** The runtime shapes of the new steps (the builder's types erased). */
export type LoopStep =
  | (StepMeta & {
    readonly type: "andForEach"
    readonly items: (context: AnyContext) => UserResult<ReadonlyArray<unknown>>
    readonly step: StepSpec
    readonly concurrency?: number | undefined
  })
  | (StepMeta & {
    readonly type: "andDoWhile" | "andDoUntil"
    readonly step: StepSpec
    readonly condition: (context: AnyContext) => UserResult<boolean>
    readonly maxIterations?: number | undefined
  })
  | (StepMeta & {
    readonly type: "andBranch"
    readonly branches: ReadonlyArray<
      { readonly condition: (context: AnyContext) => UserResult<boolean>; readonly step: StepSpec }
    >
  })
  | (StepMeta & {
    readonly type: "andMap"
    readonly map: Readonly<Record<string, (context: AnyContext) => UserResult<unknown>>>
  })

export type LoopStepType = LoopStep["type"]

export const LOOP_STEP_TYPES: ReadonlySet<string> = new Set<LoopStepType>([
  "andForEach",
  "andDoWhile",
  "andDoUntil",
  "andBranch",
  "andMap"
])

export const isLoopStep = (step: { readonly type: string }): step is LoopStep => LOOP_STEP_TYPES.has(step.type)

/** What an item's step sees besides the step context: the item's index. */
export interface ItemContext {
  readonly index: number
  /** The item's path (`<step id>[<index>]`): with the execution id, an idempotency key for the item. */
  readonly path: string
}

/** What an item's step sees. */
export interface ItemStepContext<Item, I, S, Res, Sus> extends StepContext<Item, I, S, Res, Sus>, ItemContext {}

/** What an iteration's step and condition see besides the step context: the iteration's number (from 0). */
export interface IterationContext {
  readonly iteration: number
  /** The iteration's path (`<step id>[<iteration>]`). */
  readonly path: string
}

type Condition = boolean | PromiseLike<boolean> | Effect.Effect<boolean, unknown, unknown>

/** What `items` may return: an array, as a value, a Promise or an Effect (whose `R` joins the workflow's). */
export type Items<Item, IR> =
  | ReadonlyArray<Item>
  | PromiseLike<ReadonlyArray<Item>>
  | Effect.Effect<ReadonlyArray<Item>, unknown, IR>

/** A branch of andBranch: its condition and step, both seeing the data. */
export interface Branch<Ctx> {
  readonly condition: (context: Ctx) => Condition
  /** Its `retry.while` sees `unknown` (a tuple's steps are not typed one by one while it is inferred, as andAll's). */
  readonly step: Described & StepPolicy<unknown> & { readonly id: string; readonly execute: (context: Ctx) => unknown }
}

type StepOutput<T> = T extends { readonly execute: (...args: never) => infer Ret } ? ResultValue<Ret> : never
type StepRequires<T> = T extends { readonly execute: (...args: never) => infer Ret } ? ResultContext<Ret> : never

/** andBranch's output: one entry per branch, its step's output or undefined. */
export type BranchOutput<B extends ReadonlyArray<Branch<any>>> = {
  -readonly [K in keyof B]: StepOutput<B[K]["step"]> | undefined
}

type BranchRequires<B extends ReadonlyArray<Branch<any>>> = B[number] extends infer U
  ? U extends Branch<any> ? StepRequires<U["step"]> | ResultContext<ReturnType<U["condition"]>> : never
  : never

/** andMap's output: each key's value. */
export type MapOutput<M> = {
  -readonly [K in keyof M]: M[K] extends (...args: never) => infer Ret ? ResultValue<Ret> : never
}

type MapRequires<M> = {
  [K in keyof M]: M[K] extends (...args: never) => infer Ret ? ResultContext<Ret> : never
}[keyof M]

/** What a loop's step returns: a value of the data type (the next iteration gets it as its data). */
type LoopResult<D> = D | PromiseLike<D> | Effect.Effect<D, any, any>

interface Suspending<Res, Sus> {
  readonly resumeSchema?: SchemaOf<Res> | undefined
  readonly suspendSchema?: SchemaOf<Sus> | undefined
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

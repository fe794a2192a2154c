import type { Effect } from "effect"
import type { UserResult } from "../../core/userCode.js"
import type { Described, StepContext, StepMeta, StepSpec } from "../definition/StepContext.js"
import type { Condition, ResultContext, ResultValue, SchemaOf } from "../definition/WorkflowTypes.js"
import type { StepPolicy } from "./Policy.js"

/**
 * Issue #31's loop and branch steps: their runtime shapes (LoopStep) and the types their builder methods
 * are made of (the methods themselves, LoopsChain, are in WorkflowChain.ts with the rest of the chain).
 */

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

export type BranchRequires<B extends ReadonlyArray<Branch<any>>> = B[number] extends infer U
  ? U extends Branch<any> ? StepRequires<U["step"]> | ResultContext<ReturnType<U["condition"]>> : never
  : never

/** andMap's output: each key's value. */
export type MapOutput<M> = {
  -readonly [K in keyof M]: M[K] extends (...args: never) => infer Ret ? ResultValue<Ret> : never
}

export type MapRequires<M> = {
  [K in keyof M]: M[K] extends (...args: never) => infer Ret ? ResultContext<Ret> : never
}[keyof M]

/** What a loop's step returns: a value of the data type (the next iteration gets it as its data). */
export type LoopResult<D> = D | PromiseLike<D> | Effect.Effect<D, any, any>

export interface Suspending<Res, Sus> {
  readonly resumeSchema?: SchemaOf<Res> | undefined
  readonly suspendSchema?: SchemaOf<Sus> | undefined
}

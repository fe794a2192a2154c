import { Data, type Schema } from "effect"
import type { UserResult } from "../../core/userCode.js"
import type { StepPolicy } from "../steps/Policy.js"
import type { SuspendFn } from "./WorkflowTypes.js"

/** What a step's code sees (its context) and how the runtime holds one step's code, below every kind of step. */

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

/** The optional descriptive fields of a step. */
export interface Described {
  readonly name?: string | undefined
  readonly purpose?: string | undefined
  /** Shown in /workflows/:id; not enforced. */
  readonly inputSchema?: Schema.Schema.AnyNoContext | undefined
  /** The output is checked against it (andThen). */
  readonly outputSchema?: Schema.Schema.AnyNoContext | undefined
}

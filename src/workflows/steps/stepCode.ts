import { Cause, Effect, Either, Option, ParseResult, Schema } from "effect"
import type { AgentRegistry } from "../../agents/AgentRegistry.js"
import { type LazySignal, runUserCode, type UserResult } from "../../core/userCode.js"
import { isSuspendSignal, type StepContext, type StepFn, SuspendSignal } from "../definition/StepContext.js"
import type { Step } from "../definition/WorkflowDefinition.js"
import type { SleepRecord } from "../execution/ExecutionRows.js"
import { encodeValue, isPlain } from "../execution/StepCodec.js"
import { formatBytes, jsonBytes, MAX_SUSPEND_DATA_BYTES } from "../execution/StoredValues.js"
import type { InnerCheckpoint } from "./InnerOutputs.js"
import { StepFailed, stepFailure, type StepOutcome } from "./StepOutcome.js"

/**
 * Running one step's code: the context it sees and what running needs from outside (StepEnv). Every
 * kind of step runs its code through here; which kind runs how is runner.ts, whose `runStep` the kinds
 * that run steps inside them (a child workflow) are handed as `RunStep`.
 */

/** What running steps needs from outside. */
export interface StepEnv {
  readonly agents: AgentRegistry["Type"]
  readonly executionId: string
  readonly input: unknown
  readonly context: Readonly<Record<string, unknown>>
  readonly user: unknown
  readonly userId: string | undefined
  readonly stepData: Record<string, unknown>
  /** The workflow's `suspendSchema`: what a step without its own checks `suspend`'s data against. */
  readonly suspendSchema?: Schema.Schema.AnyNoContext | undefined
  /** The attempt the step is at (1-based; steps/Policy.ts), 1 when absent. */
  readonly attempt?: number | undefined
  /** What the paths of the steps run here start with (`parent/` in a child workflow). */
  readonly pathPrefix?: string | undefined
  /** The wake time committed by the sleep step the execution stands at (issue #31). */
  readonly sleep?: SleepRecord | undefined
  /** The committed inner outputs of the step being run and how to commit more (loops and branches). */
  readonly inner?: InnerCheckpoint | undefined
}

type SuspendSchema = Schema.Schema.AnyNoContext | undefined

/**
 * `suspend` for a step: its data checked against the schema (the path on failure), stored encoded by it
 * (a value of its type; data in its encoded form, as checked before issue #30, is stored as it is) and
 * bounded, then the signal.
 */
const suspendHere = (stepId: string, schema: SuspendSchema) => (reason: string, data?: unknown): never => {
  let stored = data
  if (schema !== undefined) {
    const encoded = encodeValue(schema, data)
    const decoded = Either.isLeft(encoded) ? Schema.decodeUnknownEither(schema, { errors: "all" })(data) : encoded
    if (Either.isLeft(decoded)) {
      // What is wrong with it as a value of the schema's type (a plain schema's: every path, as before).
      const error = Either.isLeft(encoded) && !isPlain(schema) ? encoded.left : decoded.left
      throw new StepFailed({
        stepId,
        message: `suspend data does not match its schema: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
      })
    }
    if (Either.isRight(encoded)) stored = encoded.right
  }
  const bytes = jsonBytes(stored)
  if (stored !== undefined && bytes > MAX_SUSPEND_DATA_BYTES) {
    throw new StepFailed({
      stepId,
      message: `suspend data is ${formatBytes(bytes)} as JSON, over the ${
        formatBytes(MAX_SUSPEND_DATA_BYTES)
      } a suspension may hold`
    })
  }
  throw new SuspendSignal({ reason, data: stored })
}

const toStepOutcome = (stepId: string) => (cause: Cause.Cause<unknown>): Effect.Effect<never, StepOutcome> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
  const error = Cause.squash(cause)
  if (isSuspendSignal(error)) return Effect.fail(error)
  return Effect.fail(
    error instanceof StepFailed ? error : stepFailure(stepId, error, Option.isNone(Cause.failureOption(cause)))
  )
}

/**
 * Runs a step's code. The signal it sees is aborted only when the step does not succeed
 * (interrupted: suspend, cancel, race lost, shutdown; or failed).
 */
export const runCode = <A>(
  stepId: string,
  code: (signal: LazySignal) => UserResult<A>
): Effect.Effect<A, StepOutcome> => runUserCode(code, toStepOutcome(stepId))

export interface Running {
  readonly id: string
  readonly suspendSchema?: SuspendSchema
  /** `outer/inner` for an inner step; its id when absent. */
  readonly path?: string | undefined
}

export const contextFor = (
  env: StepEnv,
  step: Running,
  data: unknown,
  resumeData: unknown,
  lazySignal: LazySignal
): StepContext => ({
  data,
  input: env.input,
  steps: env.stepData,
  context: env.context,
  user: env.user,
  userId: env.userId,
  executionId: env.executionId,
  getStepData: (stepId) => env.stepData[stepId],
  suspend: suspendHere(step.id, step.suspendSchema ?? env.suspendSchema),
  resumeData,
  path: pathIn(env, step.path ?? step.id),
  attempt: env.attempt ?? 1,
  get signal() {
    return lazySignal.signal
  }
})

/** Runs `fn` as `step` (an inner step suspends with its outer step's schema unless it has its own). */
export const runFn = (env: StepEnv, step: Running, fn: StepFn, data: unknown, resumeData: unknown) =>
  runCode(step.id, (signal) => fn(contextFor(env, step, data, resumeData, signal)))

/** A path as the execution knows it: inside a child workflow, after the path of its parent step. */
export const pathIn = (env: StepEnv, path: string) => (env.pathPrefix ?? "") + path

export const inner = (outer: Running, step: Running): Running & { readonly path: string } => ({
  id: step.id,
  suspendSchema: step.suspendSchema ?? outer.suspendSchema,
  path: `${outer.path ?? outer.id}/${step.id}`
})

/** Runs one step of any kind (runner.ts's `runStep`, handed to the steps that run steps: a child workflow's). */
export type RunStep = (
  env: StepEnv,
  step: Step,
  data: unknown,
  resumeData: unknown
) => Effect.Effect<unknown, StepOutcome>

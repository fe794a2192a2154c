import { Cause, Data, Effect, Either, Option, ParseResult, Schema } from "effect"
import { isOutputSchema } from "../agents/AgentOutput.js"
import type { AgentRegistry } from "../agents/AgentRegistry.js"
import type { ApprovalAnswer, PendingApproval } from "../agents/approvals/ApprovalStore.js"
import type { CallRequest } from "../agents/generation/call.js"
import type { ErrorDetail } from "../core/errorDetail.js"
import { BadRequest, Conflict, ValidationError } from "../core/errors.js"
import { LazySignal, runUserCode, type UserResult } from "../core/userCode.js"
import { errorDetailOf, failureMessage, spanMessageOf } from "../observability/errorDetail.js"
import type { SleepRecord } from "./ExecutionRows.js"
import { encodeValue, isPlain, storedForm } from "./StepCodec.js"
import {
  APPROVAL_REASON,
  type ApprovalResumeData,
  asApprovalResume,
  EXPIRED_REASON,
  firstExpiry
} from "./steps/agentApprovals.js"
import { inMemory, type InnerCheckpoint } from "./steps/InnerOutputs.js"
import { withInnerPolicy } from "./steps/innerPolicy.js"
import { runAll, runChildSteps, runRace } from "./steps/innerRunner.js"
import { runLoopStep } from "./steps/loopRunner.js"
import { enterSleep, type SleepSignal } from "./steps/Sleep.js"
import { formatBytes, jsonBytes, MAX_INPUT_BYTES, MAX_SUSPEND_DATA_BYTES } from "./StoredValues.js"
import {
  isSuspendSignal,
  type Step,
  type StepContext,
  type StepFn,
  type StepSpec,
  SuspendSignal,
  type WorkflowDefinition
} from "./Workflow.js"

/** A step that failed (not a suspension, not an interruption). */
export class StepFailed extends Data.TaggedError("StepFailed")<{
  readonly stepId: string
  readonly message: string
  /** What the step's code failed with, as recorded beside the message (issue #30). */
  readonly detail?: ErrorDetail | undefined
  /** The message a span records instead, when `message` was made of the error's fields (user data). */
  readonly spanMessage?: string | undefined
  /** What the code failed with, for a retry policy's `while` (steps/Policy.ts); never stored. */
  readonly error?: unknown
  /** Whether `error` is a defect (a throw, a die) rather than the code's typed failure. */
  readonly defect?: boolean | undefined
}> {}

/** The failure of a step whose code failed with `error`: its message, or its tag and fields without one. */
export const stepFailure = (stepId: string, error: unknown, defect?: boolean): StepFailed => {
  const detail = errorDetailOf(error)
  return new StepFailed({
    stepId,
    message: failureMessage(error, detail),
    detail,
    spanMessage: spanMessageOf(error, detail),
    error,
    defect
  })
}

export type StepOutcome = SuspendSignal | StepFailed | SleepSignal

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
const runFn = (env: StepEnv, step: Running, fn: StepFn, data: unknown, resumeData: unknown) =>
  runCode(step.id, (signal) => fn(contextFor(env, step, data, resumeData, signal)))

/** A path as the execution knows it: inside a child workflow, after the path of its parent step. */
export const pathIn = (env: StepEnv, path: string) => (env.pathPrefix ?? "") + path

export const inner = (outer: Running, step: Running): Running & { readonly path: string } => ({
  id: step.id,
  suspendSchema: step.suspendSchema ?? outer.suspendSchema,
  path: `${outer.path ?? outer.id}/${step.id}`
})

/** andWhen's inner step, under its `timeout` and `retry` (steps/innerPolicy.ts). */
export const runInner = (env: StepEnv, outer: Running, one: StepSpec, data: unknown, resumeData: unknown) => {
  const running = inner(outer, one)
  return withInnerPolicy(
    env,
    one,
    pathIn(env, running.path),
    (env) => runFn(env, running, one.execute, data, resumeData)
  )
}

/** Decodes a workflow's input; the message is the API's validation message. */
export const decodeInput = (definition: WorkflowDefinition, input: unknown, path = "input") =>
  Either.mapLeft(
    Schema.decodeUnknownEither(definition.input as Schema.Schema<unknown>, { errors: "all" })(input),
    (error) => ValidationError.fromIssues(ParseResult.ArrayFormatter.formatErrorSync(error), [path])
  )

/**
 * A child workflow's input, as the parent's code gives it: its typed value (a `Date` for `Schema.Date`)
 * is checked as the schema's type; a value in the encoded form (JSON-shaped, as before typed data) is
 * decoded.
 */
const childInputOf = (child: WorkflowDefinition, input: unknown): Either.Either<unknown, ValidationError> =>
  Schema.is(child.input as Schema.Schema<unknown>)(input) ? Either.right(input) : decodeInput(child, input)

/**
 * A workflow's input as a request gives it: decoded, then in its stored form (StepCodec: encoded by the
 * input schema), within MAX_INPUT_BYTES (400 past it).
 */
export const decodeWorkflowInput = (definition: WorkflowDefinition, input: unknown) =>
  Either.flatMap(decodeInput(definition, input), (decoded): Either.Either<unknown, ValidationError | BadRequest> => {
    const stored = storedForm(definition.input, decoded)
    if (Either.isLeft(stored)) {
      return Either.left(ValidationError.fromIssues(ParseResult.ArrayFormatter.formatErrorSync(stored.left), ["input"]))
    }
    const bytes = jsonBytes(stored.right)
    return bytes > MAX_INPUT_BYTES
      ? Either.left(
        new BadRequest({
          message: `Workflow input is ${formatBytes(bytes)} as JSON, over the ${
            formatBytes(MAX_INPUT_BYTES)
          } an execution may store`
        })
      )
      : Either.right(stored.right)
  })

/**
 * One step's output for its input. Suspension, failure and interruption come out of the error
 * channel / cause; andTap and a false andWhen pass their input through.
 */
export const runStep = (
  env: StepEnv,
  step: Step,
  data: unknown,
  resumeData: unknown
): Effect.Effect<unknown, StepOutcome> => {
  switch (step.type) {
    case "andThen":
      // Its output is checked against its outputSchema where it is stored (ExecutionDriver) or, in a child, below.
      return runFn(env, step, step.execute, data, resumeData)
    case "andTap":
      return runFn(env, step, step.execute, data, resumeData).pipe(
        // Written inside the step's span (as one of its events): a message made of the error's fields is its tag alone.
        Effect.catchTag(
          "StepFailed",
          (failure) => Effect.logWarning(`tap step ${step.id} failed: ${failure.spanMessage ?? failure.message}`)
        ),
        Effect.as(data)
      )
    case "andWhen":
      return runCode(step.id, (signal) => step.condition(contextFor(env, step, data, resumeData, signal))).pipe(
        Effect.flatMap((holds) =>
          holds
            ? Effect.tap(runInner(env, step, step.step, data, resumeData), (out) => {
              env.stepData[step.step.id] = out
            })
            : Effect.succeed(data)
        )
      )
    case "andAll":
      return runAll(env, step, data, resumeData, env.inner ?? inMemory())
    case "andRace":
      return runRace(env, step, data, resumeData)
    case "andAgent": {
      // Answers to the approvals its call stopped on continue that call: the prompt is not asked again.
      const answers = asApprovalResume(resumeData)
      const asked = answers !== undefined
        ? continueAgent(env, step, answers)
        : runCode(step.id, (signal) => step.prompt(contextFor(env, step, data, resumeData, signal))).pipe(
          Effect.flatMap((prompt) => askAgent(env, step, { input: prompt }))
        )
      return asked.pipe(
        Effect.flatMap((answer) => {
          const map = step.map
          return map === undefined
            ? Effect.succeed(answer)
            : runFn(env, step, (context) => map(answer, context), data, resumeData)
        })
      )
    }
    case "andSleep":
    case "andSleepUntil":
      return enterSleep(
        step,
        pathIn(env, step.id),
        data,
        env.sleep,
        (fn) => runFn(env, step, fn, data, resumeData),
        (message) => new StepFailed({ stepId: step.id, message })
      )
    case "andWorkflow":
      return runCode(
        step.id,
        (signal) => step.input ? step.input(contextFor(env, step, data, resumeData, signal)) : data
      ).pipe(
        Effect.flatMap((childInput) =>
          Either.match(childInputOf(step.workflow, childInput), {
            onLeft: (error) =>
              Effect.fail(
                new StepFailed({ stepId: step.id, message: `sub-workflow ${step.workflow.id}: ${error.message}` })
              ),
            onRight: (decoded) => runChildSteps(env, step, step.workflow, decoded, resumeData, env.inner ?? inMemory())
          })
        )
      )
    default:
      return runLoopStep(env, step, data, resumeData)
  }
}

/**
 * An andAgent step resumed with the answers to its approvals continues its call. One that expired since
 * the resume was checked is a Conflict there: the call is then continued with every approval denied as
 * expired, as its expiry would have (a row answered already refuses that too).
 */
const continueAgent = (env: StepEnv, step: Extract<Step, { type: "andAgent" }>, answers: ApprovalResumeData) => {
  const ask = (data: ApprovalResumeData) =>
    askAgent(env, step, { options: { approvals: data.answers }, approvalsExpired: data.expired === true })
  return answers.expired === true ? ask(answers) : Effect.catchIf(
    ask(answers),
    (outcome) => outcome._tag === "StepFailed" && outcome.error instanceof Conflict,
    () =>
      ask({
        answers: answers.answers.map((one) => ({
          approvalId: one.approvalId,
          approved: false,
          reason: EXPIRED_REASON
        })),
        expired: true
      })
  )
}

/** An andAgent step that stopped on tool approvals: it suspends with them, until their first expiry. */
const suspendOnApprovals = (
  stepId: string,
  approvals: ReadonlyArray<PendingApproval>
): Effect.Effect<never, StepOutcome> => {
  const data = { approvals }
  const bytes = jsonBytes(data)
  return Effect.fail(
    bytes > MAX_SUSPEND_DATA_BYTES
      ? new StepFailed({
        stepId,
        message: `pending approvals are ${formatBytes(bytes)} as JSON, over the ${
          formatBytes(MAX_SUSPEND_DATA_BYTES)
        } a suspension may hold`
      })
      : new SuspendSignal({ reason: APPROVAL_REASON, data, wakeAt: firstExpiry(approvals) })
  )
}

/**
 * An andAgent step's call (its prompt, or the answers to its approvals): the agent's text, its object
 * (JSON Schema `output`) or its decoded answer (Effect Schema).
 */
const askAgent = (
  env: StepEnv,
  step: Extract<Step, { type: "andAgent" }>,
  asked: Pick<CallRequest, "input" | "approvalsExpired"> & {
    readonly options?: { readonly approvals: ReadonlyArray<ApprovalAnswer> }
  }
): Effect.Effect<unknown, StepOutcome> => {
  // The agent call is the execution's owner's: its history entry is theirs.
  const request = {
    ...asked,
    options: {
      ...asked.options,
      context: { ...env.context },
      ...(env.userId === undefined ? {} : { userId: env.userId })
    },
    user: env.user,
    // Its approvals are answered by the execution's resume only.
    boundTo: env.executionId
  }
  const output = step.output
  const answer: Effect.Effect<unknown, { readonly _tag: string } | StepOutcome> = output === undefined
    ? Effect.flatMap(
      env.agents.call(step.agent, request),
      (result) =>
        result.pendingApprovals === undefined || result.pendingApprovals.length === 0
          ? Effect.succeed(result.text)
          : suspendOnApprovals(step.id, result.pendingApprovals)
    )
    : isOutputSchema(output)
    ? env.agents.call(step.agent, { ...request, output })
    : env.agents.object(step.agent.id, { ...request, schema: output })
  return Effect.mapError(
    answer,
    (error) =>
      error._tag === "SuspendSignal" || error._tag === "StepFailed" || error._tag === "SleepSignal"
        ? error as StepOutcome
        : stepFailure(step.id, error)
  )
}

// src/workflows/steps: every kind of step: its runtime shape and definition-time checks, how it runs
// (runner.ts dispatches, stepCode.ts runs one step's code), its policies (retry, timeout), hooks,
// loops, inner steps, sleeps with their timers, agent steps with their approvals. It may import
// definition/ and execution/ (the store, rows and stored values its durable steps write); nothing of
// engine/ or api/ but WorkflowSchemas.
import { Effect, Either, ParseResult, Schema } from "effect"
import { isOutputSchema } from "../../agents/AgentOutput.js"
import type { ApprovalAnswer, PendingApproval } from "../../agents/approvals/ApprovalStore.js"
import type { CallRequest } from "../../agents/generation/call.js"
import { BadRequest, Conflict, ValidationError } from "../../core/errors.js"
import { type StepSpec, SuspendSignal } from "../definition/StepContext.js"
import type { Step, WorkflowDefinition } from "../definition/WorkflowDefinition.js"
import { storedForm } from "../execution/StepCodec.js"
import { formatBytes, jsonBytes, MAX_INPUT_BYTES, MAX_SUSPEND_DATA_BYTES } from "../execution/StoredValues.js"
import {
  APPROVAL_REASON,
  type ApprovalResumeData,
  asApprovalResume,
  EXPIRED_REASON,
  firstExpiry
} from "./agentApprovals.js"
import { inMemory } from "./InnerOutputs.js"
import { withInnerPolicy } from "./innerPolicy.js"
import { runAll, runChildSteps, runRace } from "./innerRunner.js"
import { runLoopStep } from "./loopRunner.js"
import { enterSleep } from "./Sleep.js"
import { contextFor, inner, pathIn, runCode, runFn, type Running, type StepEnv } from "./stepCode.js"
import { StepFailed, stepFailure, type StepOutcome } from "./StepOutcome.js"

/**
 * Which kind of step runs how (`runStep`): each kind's code through steps/stepCode.ts, the kinds that run
 * steps inside them through their own modules of steps/; and a workflow's input as a request gives it.
 */

export { contextFor, inner, pathIn, runCode, type Running, type StepEnv } from "./stepCode.js"
export { StepFailed, stepFailure, type StepOutcome } from "./StepOutcome.js"

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
            onRight: (decoded) =>
              runChildSteps(env, step, step.workflow, decoded, resumeData, env.inner ?? inMemory(), runStep)
          })
        )
      )
    case "andForEach":
    case "andDoWhile":
    case "andDoUntil":
    case "andBranch":
    case "andMap":
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

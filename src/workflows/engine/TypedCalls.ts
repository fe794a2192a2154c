import { Effect, Either, ParseResult, Schema } from "effect"
import { originalOf } from "../../app/bindApp.js"
import { EVERYONE, type Visibility } from "../../auth/Ownership.js"
import {
  type BadRequest,
  type Conflict,
  InternalError,
  NotFound,
  type TooManyRequests,
  UnprocessableEntity,
  ValidationError,
  type WorkflowFailed
} from "../../core/errors.js"
import type * as S from "../api/WorkflowSchemas.js"
import type { WorkflowDefinition, WorkflowResumesId } from "../definition/Workflow.js"
import { topStepOfPath } from "../execution/DefinitionCompatibility.js"
import type { WorkflowEngineCore } from "./WorkflowEngineContract.js"

/**
 * The typed programmatic calls (issue #30 item 6, settled 9): a workflow by reference, its input and
 * result by its schemas' types, beside the string-id calls the HTTP layer uses.
 */

/** A workflow given by reference that is not the one the app registered under its id. */
export class WorkflowNotRegistered extends Schema.TaggedError<WorkflowNotRegistered>()("WorkflowNotRegistered", {
  workflowId: Schema.String,
  message: Schema.String
}) {}

/** How a call from code starts an execution: what the HTTP layer takes from the caller and `options`. */
export interface WorkflowCallOptions {
  /** The user the execution belongs to. Without it the execution has no owner: see the README's "Embedding". */
  readonly userId?: string | undefined
  /** What steps see as `user` (the HTTP layer passes the authenticated user); null when absent. */
  readonly user?: unknown
  /** What steps see as `context`. */
  readonly context?: Readonly<Record<string, unknown>> | undefined
  /** The execution's id (1 to 128 letters, digits or `_.:-`); a fresh UUID when absent. */
  readonly executionId?: string | undefined
}

/** An execution that finished: `result` decoded by the workflow's `result` schema. */
export interface WorkflowCompleted<O> {
  readonly status: "completed"
  readonly executionId: string
  readonly startAt: string
  readonly endAt: string | null
  readonly result: O
}

/** An execution parked at a step until resumed (`resumeWorkflow`). */
export interface WorkflowSuspended {
  readonly status: "suspended"
  readonly executionId: string
  readonly startAt: string
  readonly suspension: {
    readonly suspendedAt: string
    readonly reason: string
    readonly suspendedStepIndex: number
    /** The data the step suspended with (`suspend(reason, data)`), if any. */
    readonly data?: unknown
  }
}

/** An execution cancelled while the call waited. */
export interface WorkflowCancelled {
  readonly status: "cancelled"
  readonly executionId: string
  readonly startAt: string
  readonly endAt: string | null
}

/**
 * How `executeWorkflow` and `resumeWorkflow` answer, by `status`. An execution that ends in error is the
 * error channel's `WorkflowFailed` (with its `executionId` and `errorDetail`), as over HTTP.
 */
export type WorkflowOutcome<O> = WorkflowCompleted<O> | WorkflowSuspended | WorkflowCancelled

/** Any definition, whatever it requires: the registry holds it bound to the layer's context. */
type AnyWorkflow = WorkflowDefinition<any, any, unknown>

/** The input type of a definition. */
export type WorkflowInput<W> = W extends WorkflowDefinition<infer I, infer _O, infer _R> ? I : never
/** The result type of a definition. */
export type WorkflowResult<W> = W extends WorkflowDefinition<infer _I, infer O, infer _R> ? O : never

/** `readonly [stepId, ResumeType]` of each top-level step, when `W` is a builder (`unknown` otherwise). */
type ResumesOf<W> = W extends { [WorkflowResumesId]?(resumes: infer Rs): void } ? Rs : unknown

type Known<Rs> = unknown extends Rs ? false : [Rs] extends [never] ? false : true

/** The ids `resumeWorkflow` may name: the workflow's top-level steps (any string when its type does not say). */
export type ResumeStepId<W> = Known<ResumesOf<W>> extends true ? Extract<ResumesOf<W>, readonly [string, unknown]>[0]
  : string

/**
 * The data a resume at step `K` takes: that step's `resumeSchema` type (or the workflow's). Without a
 * step (`K` never), the union of every top-level step's: the execution may be parked at any of them,
 * so a step without a `resumeSchema` makes it `unknown`. The engine checks it against the step's schema.
 */
export type ResumeData<W, K extends string = never> = Known<ResumesOf<W>> extends true
  ? [K] extends [never] ? Extract<ResumesOf<W>, readonly [string, unknown]>[1]
  : Extract<ResumesOf<W>, readonly [K, unknown]>[1]
  : unknown

/** What `resumeWorkflow` takes: an object, so that no two strings sit side by side. */
export interface ResumeWorkflowRequest<W extends AnyWorkflow, K extends string = never> {
  readonly workflow: W
  readonly executionId: string
  /** The step to resume at; by default the one it is suspended at. */
  readonly stepId?: K | undefined
  readonly data: ResumeData<W, K>
  /** When given, only an execution of this user is found (the HTTP layer's rule for a user's token). */
  readonly userId?: string | undefined
}

/** The typed calls of the WorkflowEngine service. */
export interface TypedCalls {
  /** Runs `workflow` (the registered definition) to the end or the first suspension. */
  readonly executeWorkflow: <I, O, R>(
    workflow: WorkflowDefinition<I, O, R>,
    input: NoInfer<I>,
    options?: WorkflowCallOptions
  ) => Effect.Effect<
    WorkflowOutcome<O>,
    WorkflowNotRegistered | ValidationError | BadRequest | Conflict | TooManyRequests | WorkflowFailed | InternalError
  >
  /** Starts `workflow` in the background; follow it with `state` or `attach` by its `executionId`. */
  readonly runWorkflow: <I, O, R>(
    workflow: WorkflowDefinition<I, O, R>,
    input: NoInfer<I>,
    options?: WorkflowCallOptions
  ) => Effect.Effect<
    typeof S.RunStarted.Type,
    WorkflowNotRegistered | ValidationError | BadRequest | Conflict | TooManyRequests | InternalError
  >
  /** Resumes a suspended execution of `workflow` with `data`, to the end or the next suspension. */
  readonly resumeWorkflow: <W extends AnyWorkflow, K extends ResumeStepId<W> = never>(
    request: ResumeWorkflowRequest<W, K>
  ) => Effect.Effect<
    WorkflowOutcome<WorkflowResult<W>>,
    | WorkflowNotRegistered
    | NotFound
    | ValidationError
    | BadRequest
    | Conflict
    | TooManyRequests
    | WorkflowFailed
    | InternalError
  >
}

/** The string-id calls the typed ones go through (the engine's own: one validated path). */
interface Untyped {
  readonly execute: WorkflowEngineCore["execute"]
  readonly run: WorkflowEngineCore["run"]
  readonly resume: WorkflowEngineCore["resume"]
  readonly state: WorkflowEngineCore["state"]
}

const invalid = (path: string) => (error: ParseResult.ParseError) =>
  ValidationError.fromIssues(ParseResult.ArrayFormatter.formatErrorSync(error), [path])

/** Encodes a value of a schema's type, for the validated path that decodes it (a ValidationError under `path`). */
const encoded = (schema: Schema.Schema.AnyNoContext | undefined, value: unknown, path: string) =>
  schema === undefined
    ? Either.right(value)
    : Either.mapLeft(
      Schema.encodeUnknownEither(schema as Schema.Schema<unknown, unknown>, { errors: "all" })(value),
      invalid(path)
    )

export const makeTypedCalls = (engine: Untyped, registered: ReadonlyMap<string, WorkflowDefinition>) => {
  /**
   * The definition registered under the workflow's id when it was made from this very object (the
   * registry holds it bound to the layer's context): its schemas are the workflow's.
   */
  const registeredOne = (workflow: AnyWorkflow): Either.Either<WorkflowDefinition, WorkflowNotRegistered> => {
    const found = registered.get(workflow.id)
    return found !== undefined && (found === workflow || originalOf(found) === workflow) ?
      Either.right(found) :
      Either.left(
        new WorkflowNotRegistered({
          workflowId: workflow.id,
          message: found === undefined
            ? `Workflow ${workflow.id} is not registered in the app (defineApp({ workflows }))`
            : `Workflow ${workflow.id} is not the one registered in the app under that id (another definition is)`
        })
      )
  }

  const requestOf = (definition: WorkflowDefinition, input: unknown, options: WorkflowCallOptions) =>
    Either.map(encoded(definition.input, input, "input"), (wire): S.ExecuteRequest => ({
      input: wire,
      options: {
        ...(options.context === undefined ? {} : { context: { ...options.context } }),
        ...(options.executionId === undefined ? {} : { executionId: options.executionId })
      }
    }))

  const startOptions = (options: WorkflowCallOptions) => ({
    ...(options.userId === undefined ? {} : { userId: options.userId }),
    ...(options.user === undefined ? {} : { user: options.user })
  })

  /** The engine's answer, its `result` decoded by the definition's `result` schema. */
  const outcomeOf = <O>(
    definition: WorkflowDefinition,
    answer: S.ExecutionResult
  ): Either.Either<WorkflowOutcome<O>, InternalError> => {
    const base = { executionId: answer.executionId, startAt: answer.startAt }
    switch (answer.status) {
      case "completed":
        return Either.map(
          Either.mapLeft(
            // The definition holds its schemas erased; `O` is its result schema's type.
            Schema.decodeUnknownEither(definition.result as Schema.Schema<O, unknown>)(answer.result),
            (error) =>
              new InternalError({
                message: `Execution ${answer.executionId}: its result does not decode: ${error.message}`
              })
          ),
          (result) => ({ ...base, status: "completed" as const, endAt: answer.endAt, result })
        )
      case "suspended":
        return answer.suspension === undefined
          ? Either.left(
            new InternalError({ message: `Execution ${answer.executionId} is suspended without a suspension` })
          )
          : Either.right({ ...base, status: "suspended" as const, suspension: answer.suspension })
      case "cancelled":
        return Either.right({ ...base, status: "cancelled" as const, endAt: answer.endAt })
      case "error":
      case "running":
        return Either.left(
          new InternalError({ message: `Execution ${answer.executionId} answered while ${answer.status}` })
        )
    }
  }

  /** A start by reference fails neither with NotFound (the workflow is registered) nor 422 (no Idempotency-Key). */
  const started = <A, E>(effect: Effect.Effect<A, E | NotFound | UnprocessableEntity>) =>
    Effect.catchIf(
      effect,
      (error): error is NotFound | UnprocessableEntity =>
        error instanceof NotFound || error instanceof UnprocessableEntity,
      (error) => Effect.fail(new InternalError({ message: error.message }))
    )

  const executeWorkflow: TypedCalls["executeWorkflow"] = (workflow, input, options = {}) =>
    Effect.gen(function*() {
      const definition = yield* registeredOne(workflow)
      const request = yield* requestOf(definition, input, options)
      const answer = yield* started(engine.execute(definition.id, request, startOptions(options)))
      return yield* outcomeOf<WorkflowResult<typeof workflow>>(definition, answer)
    }).pipe(Effect.withSpan("WorkflowEngine.executeWorkflow", { captureStackTrace: false }))

  const runWorkflow: TypedCalls["runWorkflow"] = (workflow, input, options = {}) =>
    Effect.gen(function*() {
      const definition = yield* registeredOne(workflow)
      const request = yield* requestOf(definition, input, options)
      return yield* started(engine.run(definition.id, request, startOptions(options)))
    }).pipe(Effect.withSpan("WorkflowEngine.runWorkflow", { captureStackTrace: false }))

  const resumeWorkflow: TypedCalls["resumeWorkflow"] = (request) =>
    Effect.gen(function*() {
      const definition = yield* registeredOne(request.workflow)
      const visibility: Visibility = request.userId === undefined ? EVERYONE : { all: false, userId: request.userId }
      // The step whose schema the data is of: the one named, else the one it is parked at.
      const stepId = request.stepId ??
        (yield* engine.state(definition.id, request.executionId, visibility)).suspension?.stepId
      const step = definition.steps.find((one) => stepId !== undefined && one.id === topStepOfPath(stepId))
      const data = yield* encoded(step?.resumeSchema ?? definition.resumeSchema, request.data, "data")
      const answer = yield* engine.resume(definition.id, request.executionId, data, request.stepId, visibility)
      return yield* outcomeOf<WorkflowResult<typeof request.workflow>>(definition, answer)
    }).pipe(Effect.withSpan("WorkflowEngine.resumeWorkflow", { captureStackTrace: false }))

  return { executeWorkflow, runWorkflow, resumeWorkflow }
}

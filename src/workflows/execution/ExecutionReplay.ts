import { Effect, Either, Option } from "effect"
import type { Visibility } from "../../auth/Ownership.js"
import { BadRequest, Conflict, excerpt, type NotFound, type TooManyRequests } from "../../core/errors.js"
import type * as S from "../api/WorkflowSchemas.js"
import type { WorkflowDefinition } from "../definition/Workflow.js"
import type { StartOptions } from "../engine/WorkflowEngineContract.js"
import { decodeWorkflowInput } from "../steps/runner.js"
import { definitionHash, runningStepId, topStepOfPath } from "./DefinitionCompatibility.js"
import { stepStart, workflowEvent } from "./ExecutionEndings.js"
import { now } from "./ExecutionRows.js"
import type { Execution, ExecutionStore } from "./ExecutionStore.js"
import { handedData, innerSteps } from "./StepCodec.js"
import { jsonBytes } from "./StoredValues.js"

/** How many of a failed execution's last events are read to find the step it failed at (a changed definition). */
const FAILED_STEP_EVENTS = 200

/** The status of the copied steps' step-complete events in a replay's history. */
export const COPIED = "copied"

type Found = { readonly definition: WorkflowDefinition; readonly execution: Execution }

/**
 * Replay and restart (issue #33, settled 11). A replay is a NEW execution, the caller's, whose first
 * steps are already committed: the outputs of the steps before `fromStep` are copied from the original's
 * checkpoint (its `steps` record, as stored), with a `step-complete` event each (status `copied`), and
 * it runs from `fromStep` as an execution taken over after a crash goes on from its committed steps.
 * It records `replay_of`/`replay_from`; the original's row is never written (its replays are found by
 * the index), so concurrent replays of one execution never race on it.
 */
export const makeExecutionReplay = (deps: {
  readonly store: ExecutionStore["Type"]
  readonly instanceId: string
  readonly findExecution: (
    workflowId: string,
    executionId: string,
    visibility?: Visibility
  ) => Effect.Effect<Found, NotFound>
  /** Stores and launches the execution with these opening events; none when its id is taken. */
  readonly startIfNew: (
    definition: WorkflowDefinition,
    execution: Execution,
    how: { readonly opening: ReadonlyArray<S.WorkflowEvent>; readonly checked: boolean }
  ) => Effect.Effect<Option.Option<unknown>, BadRequest | Conflict | TooManyRequests>
}) => {
  const { store } = deps

  const started = (execution: Execution): typeof S.ReplayStarted.Type => ({
    executionId: execution.id,
    workflowId: execution.workflowId,
    status: execution.status,
    startAt: execution.createdAt,
    replayOf: { executionId: execution.replayOf ?? "", fromStep: execution.replayFrom ?? "" }
  })

  /** The replay stored under `id` (a retry with the Idempotency-Key); another workflow's execution there is a taken id. */
  const storedReplay = (id: string, workflowId: string) =>
    Effect.flatMap(
      store.get(id),
      (stored) =>
        Option.isSome(stored) && (stored.value.workflowId !== workflowId || stored.value.replayOf === undefined)
          ? Effect.fail(new BadRequest({ message: `Execution ${id} already exists` }))
          : Effect.succeed(stored)
    )

  /** The copied `steps` record: the outputs (and inner steps' entries) of the steps before `index`, as the original stored them. */
  const copiedSteps = (definition: WorkflowDefinition, original: Execution, index: number, fromStep: string) =>
    Effect.gen(function*() {
      const changed = original.definitionHash !== definitionHash(definition)
      const copied: Record<string, unknown> = {}
      for (const step of definition.steps.slice(0, index)) {
        if (!Object.hasOwn(original.stepData, step.id)) {
          const why = changed
            ? `the workflow changed since it ran and step ${step.id} is not among its committed steps`
            : `step ${step.id} has no committed output in it (the execution did not get that far)`
          return yield* new Conflict({
            message: `Cannot replay execution ${original.id} from step ${fromStep}: ${why}`
          })
        }
        copied[step.id] = original.stepData[step.id]
        for (const inner of innerSteps(step)) {
          if (Object.hasOwn(original.stepData, inner.id)) copied[inner.id] = original.stepData[inner.id]
        }
      }
      return copied
    })

  const replayFrom = (found: Found, fromStep: string, input: Option.Option<unknown>, options: StartOptions) =>
    Effect.gen(function*() {
      const { definition, execution: original } = found
      const top = topStepOfPath(fromStep)
      if (top !== fromStep) {
        return yield* new BadRequest({
          message:
            `fromStep "${excerpt(fromStep, 80)}" is inside step ${
              excerpt(top, 80)
            }: a replay runs from a top-level step ` +
            `(replay from ${excerpt(top, 80)}: its inner steps run again)`
        })
      }
      const index = definition.steps.findIndex((step) => step.id === fromStep)
      if (index < 0) {
        return yield* new BadRequest({ message: `Workflow ${definition.id} has no step ${excerpt(fromStep, 80)}` })
      }
      if (Option.isSome(input) && index > 0) {
        return yield* new BadRequest({
          message: `input can be given only when replaying from the first step (${definition.steps[0].id}): ` +
            `a replay from ${fromStep} keeps the input of execution ${original.id}`
        })
      }
      const stepData = yield* copiedSteps(definition, original, index, fromStep)
      const workflowInput = Option.isSome(input) ? yield* decodeWorkflowInput(definition, input.value) : original.input
      const handed = index === 0 ? workflowInput : stepData[definition.steps[index - 1].id]
      // Under a changed definition the copied data comes from another predecessor: it must fit the schema before fromStep.
      const checked = original.definitionHash !== definitionHash(definition) && Option.isNone(input)
      if (checked) {
        yield* Either.mapLeft(
          handedData(definition, index, handed),
          (message) =>
            new Conflict({ message: `Cannot replay execution ${original.id} from step ${fromStep}: ${message}` })
        )
      }
      const chosen = crypto.randomUUID()
      const id = options.idempotent === undefined ? chosen : yield* options.idempotent(chosen)
      if (options.idempotent !== undefined) {
        const stored = yield* storedReplay(id, definition.id)
        if (Option.isSome(stored)) return started(stored.value)
      }
      const createdAt = now()
      const span = yield* Effect.option(Effect.currentSpan)
      const execution: Execution = {
        id,
        workflowId: definition.id,
        workflowName: definition.name,
        status: "running",
        input: workflowInput,
        context: { ...original.context },
        user: options.user ?? null,
        userId: options.userId,
        stepIndex: index,
        stepData,
        currentData: handed,
        metadata: Option.match(span, {
          onNone: () => ({ traceId: "", spanId: "" }),
          onSome: (s) => ({ traceId: s.traceId, spanId: s.spanId })
        }),
        version: 0,
        owner: deps.instanceId,
        lastSeq: 0,
        definitionHash: definitionHash(definition),
        replayOf: original.id,
        replayFrom: fromStep,
        createdAt,
        updatedAt: createdAt
      }
      const opening = [
        workflowEvent(execution, "workflow-start", definition.name, "running", { input: workflowInput }),
        ...definition.steps.slice(0, index).map((step, i) =>
          workflowEvent(execution, "step-complete", step.id, COPIED, {
            stepIndex: i,
            stepType: step.type,
            output: stepData[step.id]
          })
        ),
        stepStart(definition, execution, index, handed)
      ]
      const launched = yield* deps.startIfNew(definition, { ...execution, historyBytes: jsonBytes(opening) }, {
        opening,
        checked
      })
      if (Option.isSome(launched)) {
        yield* Effect.logInfo(`workflow replay started from step ${fromStep}`).pipe(
          Effect.annotateLogs({ workflowId: definition.id, executionId: id, replayOf: original.id })
        )
        return started(execution)
      }
      // Taken between looking and starting: by a concurrent request with the same key, whose replay this is.
      const stored = yield* storedReplay(id, definition.id)
      if (Option.isNone(stored)) return yield* new BadRequest({ message: `Execution ${id} already exists` })
      return started(stored.value)
    })

  /** The top-level step a failed execution failed at, by id; a Conflict when there is none to restart from. */
  const failedStep = (found: Found) =>
    Effect.gen(function*() {
      const { definition, execution } = found
      if (execution.status !== "error") {
        return yield* new Conflict({
          message:
            `Execution ${execution.id} is ${execution.status}: only a failed execution (error) can be restarted; ` +
            `replay it from a step instead (POST …/replay)`
        })
      }
      const same = execution.definitionHash === definitionHash(definition)
      const stepId = same
        ? definition.steps[execution.stepIndex]?.id
        : runningStepId(
          execution.stepIndex,
          yield* store.events(execution.id, Math.max(0, execution.lastSeq - FAILED_STEP_EVENTS))
        )
      if (stepId === undefined) {
        return yield* new Conflict({
          message: same
            ? `Execution ${execution.id} failed after its last step (its result): there is no failed step to restart from`
            : `Execution ${execution.id} ran under another version of workflow ${definition.id} and the step it failed at is not known`
        })
      }
      if (!definition.steps.some((step) => step.id === stepId)) {
        return yield* new Conflict({
          message: `Execution ${execution.id} failed at step ${stepId}, which is no longer in workflow ${definition.id}`
        })
      }
      return stepId
    })

  /** The attributes of an operation's span on a workflow: the trace index files the trace under it. */
  const onWorkflow = (workflowId: string) =>
    Effect.annotateCurrentSpan({ "entity.type": "workflow", "entity.id": workflowId })

  return {
    replay: Effect.fn("WorkflowEngine.replay", { captureStackTrace: false })(
      function*(
        workflowId: string,
        executionId: string,
        request: S.ReplayRequest,
        options: StartOptions = {},
        visibility?: Visibility
      ) {
        yield* onWorkflow(workflowId)
        const found = yield* deps.findExecution(workflowId, executionId, visibility)
        const input = request.input === undefined ? Option.none() : Option.some(request.input)
        return yield* replayFrom(found, request.fromStep, input, options)
      }
    ),

    restart: Effect.fn("WorkflowEngine.restart", { captureStackTrace: false })(
      function*(workflowId: string, executionId: string, options: StartOptions = {}, visibility?: Visibility) {
        yield* onWorkflow(workflowId)
        const found = yield* deps.findExecution(workflowId, executionId, visibility)
        return yield* replayFrom(found, yield* failedStep(found), Option.none(), options)
      }
    )
  }
}

import { Effect, Option } from "effect"
import { BadRequest, type NotFound } from "../../core/errors.js"
import type * as S from "../api/WorkflowSchemas.js"
import type { ConcurrencyGate } from "../concurrency/ConcurrencyGate.js"
import type { WorkflowDefinition } from "../definition/WorkflowDefinition.js"
import type { StartOptions } from "../engine/WorkflowEngineContract.js"
import { decodeWorkflowInput } from "../steps/runner.js"
import { definitionHash } from "./DefinitionCompatibility.js"
import { openingEvents } from "./ExecutionEndings.js"
import { now } from "./ExecutionRows.js"
import type { Execution, ExecutionStore } from "./ExecutionStore.js"

/**
 * Starting an execution: the one a request asks for prepared (its input decoded, its id chosen, its
 * concurrency key), then stored with its opening events and launched as one action.
 */
export const makeExecutionStart = (deps: {
  readonly store: ExecutionStore["Type"]
  readonly gate: ConcurrencyGate
  readonly instanceId: string
  readonly findWorkflow: (id: string) => Effect.Effect<WorkflowDefinition, NotFound>
}) => {
  const { gate, instanceId, store } = deps
  const { launch } = gate.driver
  const { findWorkflow } = deps

  /**
   * The execution a request asks for, not yet stored. `checkTaken`: fail now when its id is taken
   * (a stream must, before its status line; execute and run learn it from the insert).
   */
  const prepare = (workflowId: string, request: S.ExecuteRequest, options: StartOptions = {}, checkTaken = false) =>
    Effect.gen(function*() {
      const definition = yield* findWorkflow(workflowId)
      // Stored encoded by the input schema (StepCodec): the first step decodes it, here or after a crash.
      const input = yield* decodeWorkflowInput(definition, request.input)
      const chosen = request.options?.executionId ?? crypto.randomUUID()
      const id = options.idempotent === undefined ? chosen : yield* options.idempotent(chosen)
      if (checkTaken && options.idempotent === undefined && (yield* store.exists(id))) return yield* alreadyExists(id)
      const span = yield* Effect.option(Effect.currentSpan)
      const createdAt = now()
      const execution: Execution = {
        id,
        workflowId,
        workflowName: definition.name,
        status: "running",
        input,
        context: { ...request.options?.context },
        ...(request.options?.webhook === undefined ? {} : { webhookUrl: request.options.webhook.url }),
        user: options.user ?? null,
        userId: options.userId,
        stepIndex: 0,
        stepData: {},
        currentData: input,
        metadata: Option.match(span, {
          onNone: () => ({ traceId: "", spanId: "" }),
          onSome: (s) => ({ traceId: s.traceId, spanId: s.spanId })
        }),
        version: 0,
        owner: instanceId,
        lastSeq: 0,
        definitionHash: definitionHash(definition),
        createdAt,
        updatedAt: createdAt
      }
      // A limited workflow's (issue #33): keyed (400 on a bad key; reject's 409 when full), stored queued.
      return { definition, execution: yield* gate.keyed(definition, execution) }
    })

  const alreadyExists = (id: string) => new BadRequest({ message: `Execution ${id} already exists` })

  /**
   * Stores the execution with its opening events (its first step's step-start among them) and
   * launches its fiber; uninterruptible, so never one without the other. None when the id is taken.
   * A limited workflow's is stored queued and launched once admitted (concurrency/ConcurrencyGate.ts).
   */
  const startIfNew = (
    definition: WorkflowDefinition,
    prepared: Execution,
    how?: { readonly opening: ReadonlyArray<S.WorkflowEvent>; readonly checked: boolean }
  ) =>
    Effect.uninterruptible(Effect.gen(function*() {
      const execution = yield* gate.keyed(definition, prepared)
      const opening = how?.opening ?? openingEvents(definition, execution)
      if (Option.isNone(yield* gate.open(execution, opening))) return Option.none()
      yield* Effect.logInfo("workflow started").pipe(
        Effect.annotateLogs({ workflowId: definition.id, executionId: execution.id })
      )
      const key = execution.concurrencyKey
      if (key !== undefined) return Option.some(yield* gate.started(definition, execution, key))
      const fiber = yield* launch(definition, execution, { startRecorded: true, checked: how?.checked ?? false })
      return Option.some({ execution, fiber, queued: false })
    }))

  const start = (definition: WorkflowDefinition, execution: Execution) =>
    Effect.flatMap(
      startIfNew(definition, execution),
      (launched) => Option.isSome(launched) ? Effect.succeed(launched.value) : Effect.fail(alreadyExists(execution.id))
    )

  return { prepare, startIfNew, start }
}

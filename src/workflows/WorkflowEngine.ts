import { Context, Deferred, Effect, Either, FiberMap, JSONSchema, Layer, Option, ParseResult, PubSub, Queue, Schema, Stream } from "effect"
import { AgentRegistry } from "../agents/AgentRegistry.js"
import { BadRequest, NotFound, ValidationError, WorkflowFailed } from "../errors.js"
import type { SseFrame } from "../http/sse.js"
import { type Execution, type ExecutionQuery, ExecutionStore, type StoredEvent } from "./ExecutionStore.js"
import { decodeInput, runStep, StepFailed, type StepEnv } from "./runner.js"
import type { Step, WorkflowDefinition } from "./Workflow.js"
import type * as S from "./WorkflowSchemas.js"

type Json = Record<string, unknown>

const SETTLING = new Set(["workflow-suspended", "workflow-complete", "workflow-error", "workflow-cancelled"])
/** Parked (self-suspended) fibers kept in memory; past this the oldest is let go and resumes from its checkpoint. */
const MAX_PARKED = 10_000

interface ResumeSignal {
  readonly resumeData: unknown
}

const now = () => new Date().toISOString()
const toJsonSchema = (schema: Schema.Schema.Any | undefined): Json | undefined =>
  schema === undefined ? undefined : (JSONSchema.make(schema) as unknown as Json)

const describeStep = (step: Step): typeof S.StepDescription.Type => ({
  id: step.id,
  name: step.name ?? step.id,
  type: step.type,
  purpose: step.purpose ?? "",
  ...(step.inputSchema ? { inputSchema: toJsonSchema(step.inputSchema)! } : {}),
  ...(step.outputSchema ? { outputSchema: toJsonSchema(step.outputSchema)! } : {}),
  ...(step.suspendSchema ? { suspendSchema: toJsonSchema(step.suspendSchema)! } : {}),
  ...(step.resumeSchema ? { resumeSchema: toJsonSchema(step.resumeSchema)! } : {})
})

export interface StartOptions {
  readonly user?: unknown
}

export class WorkflowEngine extends Context.Tag("WorkflowEngine")<WorkflowEngine, {
  readonly list: Effect.Effect<ReadonlyArray<typeof S.WorkflowSummary.Type>>
  readonly details: (id: string) => Effect.Effect<typeof S.WorkflowDetails.Type, NotFound>
  /** Runs to the end or the first suspension. */
  readonly execute: (
    id: string,
    request: S.ExecuteRequest,
    options?: StartOptions
  ) => Effect.Effect<S.ExecutionResult, NotFound | ValidationError | BadRequest | WorkflowFailed>
  /** Starts in the background. */
  readonly run: (
    id: string,
    request: S.ExecuteRequest,
    options?: StartOptions
  ) => Effect.Effect<typeof S.RunStarted.Type, NotFound | ValidationError | BadRequest>
  /** Starts and follows the execution's events until it settles, then its result. */
  readonly stream: (
    id: string,
    request: S.ExecuteRequest,
    options?: StartOptions
  ) => Effect.Effect<Stream.Stream<SseFrame>, NotFound | ValidationError | BadRequest>
  /** Replays the events after `afterSeq`, then follows live ones until the execution settles. */
  readonly attach: (id: string, executionId: string, afterSeq: number) => Effect.Effect<Stream.Stream<SseFrame>, NotFound>
  readonly suspend: (id: string, executionId: string, reason: string) => Effect.Effect<typeof S.SuspendResult.Type, NotFound | BadRequest>
  readonly resume: (
    id: string,
    executionId: string,
    resumeData: unknown,
    stepId?: string
  ) => Effect.Effect<S.ExecutionResult, NotFound | ValidationError | BadRequest | WorkflowFailed>
  readonly cancel: (id: string, executionId: string, reason: string) => Effect.Effect<typeof S.CancelResult.Type, NotFound | BadRequest>
  readonly state: (id: string, executionId: string) => Effect.Effect<typeof S.ExecutionState.Type, NotFound>
  readonly executions: (query: ExecutionQuery) => Effect.Effect<ReadonlyArray<typeof S.ExecutionRecord.Type>, NotFound>
}>() {}

export const WorkflowEngineLive = (workflows: ReadonlyArray<WorkflowDefinition>) =>
  Layer.scoped(
    WorkflowEngine,
    Effect.gen(function*() {
      const store = yield* ExecutionStore
      const agents = yield* AgentRegistry
      const fibers = yield* FiberMap.make<string>()
      const parked = new Map<string, Deferred.Deferred<ResumeSignal>>()
      const hubs = new Map<string, PubSub.PubSub<StoredEvent>>()
      const byId = new Map<string, WorkflowDefinition>()
      for (const definition of workflows) {
        if (byId.has(definition.id)) throw new Error(`Two workflows have the id "${definition.id}"`)
        byId.set(definition.id, definition)
      }

      const findWorkflow = (id: string) =>
        Effect.suspend(() => {
          const definition = byId.get(id)
          return definition === undefined ? Effect.fail(NotFound.of("Workflow", id)) : Effect.succeed(definition)
        })

      const findExecution = (workflowId: string, executionId: string) =>
        Effect.gen(function*() {
          const definition = yield* findWorkflow(workflowId)
          const execution = yield* store.get(executionId)
          if (Option.isNone(execution) || execution.value.workflowId !== workflowId) {
            return yield* NotFound.of("Execution", executionId)
          }
          return { definition, execution: execution.value }
        })

      // --- live events ------------------------------------------------------------------------------

      const hubFor = (id: string) =>
        Effect.suspend(() => {
          const existing = hubs.get(id)
          if (existing) return Effect.succeed(existing)
          return Effect.tap(PubSub.unbounded<StoredEvent>(), (hub) => Effect.sync(() => hubs.set(id, hub)))
        })

      const publish = (id: string, seq: number, event: S.WorkflowEvent) =>
        Effect.suspend(() => {
          const hub = hubs.get(id)
          if (hub === undefined) return Effect.void
          if (event.type !== "workflow-suspended" && SETTLING.has(event.type)) hubs.delete(id)
          return PubSub.publish(hub, { seq, event })
        })

      const emit = (id: string, event: S.WorkflowEvent) =>
        Effect.flatMap(store.appendEvent(id, event), (seq) => publish(id, seq, event))

      const event = (
        execution: { readonly id: string },
        type: S.WorkflowEvent["type"],
        from: string,
        status: string,
        extra: Partial<S.WorkflowEvent> = {}
      ): S.WorkflowEvent => ({ type, executionId: execution.id, from, timestamp: now(), status, ...extra })

      // --- driving an execution -----------------------------------------------------------------------

      const park = (id: string) =>
        Effect.acquireUseRelease(
          Effect.gen(function*() {
            if (parked.size >= MAX_PARKED) {
              const oldest = parked.keys().next().value!
              parked.delete(oldest)
              yield* Effect.forkDaemon(FiberMap.remove(fibers, oldest))
            }
            const deferred = yield* Deferred.make<ResumeSignal>()
            parked.set(id, deferred)
            return deferred
          }),
          Deferred.await,
          (deferred) => Effect.sync(() => parked.get(id) === deferred && parked.delete(id))
        )

      const checkResult = (definition: WorkflowDefinition, output: unknown) =>
        Either.mapLeft(
          Schema.decodeUnknownEither(definition.result as Schema.Schema<unknown>)(output),
          (error) => `result does not match the workflow's result schema: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
        )

      /** Runs from the execution's checkpoint to its end, parking at each self-suspension. */
      const drive = (definition: WorkflowDefinition, execution: Execution): Effect.Effect<void> =>
        Effect.gen(function*() {
          const env: StepEnv = {
            agents,
            executionId: execution.id,
            input: execution.input,
            context: execution.context,
            user: execution.user,
            stepData: { ...execution.stepData }
          }
          let index = execution.stepIndex
          let data = execution.currentData
          let resumeData = execution.resumeData
          while (index < definition.steps.length) {
            const step = definition.steps[index]
            yield* emit(execution.id, event(execution, "step-start", step.id, "running", { stepIndex: index, stepType: step.type, input: data }))
            const outcome = yield* Effect.either(runStep(env, step, data, resumeData)).pipe(
              Effect.withSpan("workflow.step", { captureStackTrace: false,
                attributes: {
                  "entity.type": "workflow",
                  "entity.id": definition.id,
                  "execution.id": execution.id,
                  "step.id": step.id,
                  "step.type": step.type,
                  "step.index": index
                }
              })
            )
            if (Either.isLeft(outcome)) {
              const failure = outcome.left
              if (failure instanceof StepFailed) {
                return yield* fail(execution, `step ${failure.stepId}: ${failure.message}`)
              }
              const suspension = { suspendedAt: now(), reason: failure.reason, stepIndex: index, stepId: step.id, data: failure.data }
              const suspended = event(execution, "workflow-suspended", step.id, "suspended", { stepIndex: index, reason: failure.reason })
              const seq = yield* store.suspend(execution.id, suspension, suspended)
              if (Option.isNone(seq)) return
              yield* publish(execution.id, seq.value, suspended)
              yield* Effect.logInfo(`workflow suspended at ${step.id}: ${failure.reason}`)
              resumeData = (yield* park(execution.id)).resumeData
              continue
            }
            env.stepData[step.id] = outcome.right
            data = outcome.right
            resumeData = undefined
            index++
            const completed = event(execution, "step-complete", step.id, "success", { stepIndex: index - 1, stepType: step.type, output: data })
            const seq = yield* store.checkpoint(execution.id, { stepIndex: index, currentData: data, stepData: env.stepData }, completed)
              .pipe(Effect.uninterruptible)
            yield* publish(execution.id, seq, completed)
          }
          const result = checkResult(definition, data)
          if (Either.isLeft(result)) return yield* fail(execution, result.left)
          const done = event(execution, "workflow-complete", definition.name, "success", { output: data })
          const seq = yield* store.finish(execution.id, { status: "completed", output: data }, done)
          if (Option.isSome(seq)) yield* publish(execution.id, seq.value, done)
          yield* Effect.logInfo("workflow completed")
        }).pipe(
          Effect.catchAllDefect((defect) =>
            Effect.zipRight(Effect.logError("workflow execution crashed", defect), fail(execution, "Internal error"))
          ),
          Effect.annotateLogs({ workflowId: definition.id, executionId: execution.id }),
          Effect.withSpan("WorkflowEngine.drive", { captureStackTrace: false,
            attributes: { "entity.type": "workflow", "entity.id": definition.id, "execution.id": execution.id }
          })
        )

      const fail = (execution: Execution, message: string) =>
        Effect.gen(function*() {
          const failed = event(execution, "workflow-error", execution.workflowName, "error", { error: message })
          const seq = yield* store.finish(execution.id, { status: "error", error: message }, failed)
          if (Option.isSome(seq)) yield* publish(execution.id, seq.value, failed)
          yield* Effect.logWarning(`workflow failed: ${message}`)
        })

      const launch = (definition: WorkflowDefinition, execution: Execution) =>
        Effect.zipRight(hubFor(execution.id), FiberMap.run(fibers, execution.id, drive(definition, execution)))

      // --- results ------------------------------------------------------------------------------------

      const resultOf = (execution: Execution): Effect.Effect<S.ExecutionResult, WorkflowFailed> => {
        if (execution.status === "error") {
          return Effect.fail(new WorkflowFailed({
            message: `Failed to execute workflow: ${execution.error ?? "unknown error"}`,
            executionId: execution.id
          }))
        }
        const suspended = execution.status === "suspended" && execution.suspension !== undefined
        return Effect.succeed({
          executionId: execution.id,
          startAt: execution.createdAt,
          endAt: execution.endedAt ?? null,
          status: execution.status,
          result: execution.status === "completed" ? execution.output ?? null : null,
          ...(suspended
            ? {
              suspension: {
                suspendedAt: execution.suspension!.suspendedAt,
                reason: execution.suspension!.reason,
                suspendedStepIndex: execution.suspension!.stepIndex
              }
            }
            : {})
        })
      }

      const reload = (id: string) => Effect.map(store.get(id), Option.getOrThrow)

      /** Subscribes to the execution's events, runs `action`, and waits until the execution settles. */
      const settleAfter = <E>(id: string, action: Effect.Effect<void, E>) =>
        Effect.scoped(Effect.gen(function*() {
          const queue = yield* PubSub.subscribe(yield* hubFor(id))
          yield* action
          while (!SETTLING.has((yield* Queue.take(queue)).event.type)) {
            // keep waiting
          }
          return yield* Effect.flatMap(reload(id), resultOf)
        }))

      /** The events after `afterSeq` until the execution settles, then the workflow-result frame. */
      const follow = (id: string, afterSeq: number, subscription: Option.Option<Queue.Dequeue<StoredEvent>>) =>
        Stream.unwrap(Effect.gen(function*() {
          const before = yield* reload(id)
          const stored = yield* store.events(id, afterSeq)
          const lastStored = stored.at(-1)?.seq ?? afterSeq
          const live = before.status === "running" && Option.isSome(subscription)
            ? Stream.fromQueue(subscription.value).pipe(
              Stream.filter((entry) => entry.seq > lastStored),
              Stream.takeUntil((entry) => SETTLING.has(entry.event.type))
            )
            : Stream.empty
          const events = Stream.concat(Stream.fromIterable(stored), live)
          return Stream.concat(
            Stream.map(events, (entry): SseFrame => ({ id: entry.seq, data: entry.event })),
            Stream.fromEffect(Effect.gen(function*() {
              const last = yield* Effect.map(store.events(id, 0), (all) => all.at(-1)?.seq ?? 0)
              const execution = yield* reload(id)
              const result = yield* Effect.either(resultOf(execution))
              return {
                id: last + 1,
                data: {
                  type: "workflow-result",
                  executionId: id,
                  status: execution.status,
                  result: Either.isRight(result) ? result.right.result : null,
                  endAt: execution.endedAt ?? null,
                  ...(Either.isRight(result) && result.right.suspension ? { suspension: result.right.suspension } : {}),
                  ...(execution.error ? { error: execution.error } : {})
                }
              } satisfies SseFrame
            }))
          )
        }))

      // --- starting -----------------------------------------------------------------------------------

      const prepare = (workflowId: string, request: S.ExecuteRequest, options: StartOptions = {}) =>
        Effect.gen(function*() {
          const definition = yield* findWorkflow(workflowId)
          const input = yield* decodeInput(definition, request.input)
          const id = request.options?.executionId ?? crypto.randomUUID()
          if (yield* store.exists(id)) return yield* new BadRequest({ message: `Execution ${id} already exists` })
          const span = yield* Effect.option(Effect.currentSpan)
          const createdAt = now()
          const execution: Execution = {
            id,
            workflowId,
            workflowName: definition.name,
            status: "running",
            input,
            context: { ...request.options?.context },
            user: options.user ?? null,
            stepIndex: 0,
            stepData: {},
            currentData: input,
            metadata: Option.match(span, {
              onNone: () => ({ traceId: "", spanId: "" }),
              onSome: (s) => ({ traceId: s.traceId, spanId: s.spanId })
            }),
            version: 0,
            createdAt,
            updatedAt: createdAt
          }
          return { definition, execution }
        })

      const start = (definition: WorkflowDefinition, execution: Execution) =>
        Effect.gen(function*() {
          yield* store.create(execution)
          yield* hubFor(execution.id)
          yield* emit(execution.id, event(execution, "workflow-start", definition.name, "running", { input: execution.input }))
          yield* Effect.logInfo("workflow started").pipe(
            Effect.annotateLogs({ workflowId: definition.id, executionId: execution.id })
          )
          yield* launch(definition, execution)
        })

      // --- recovery: executions a dead process left running continue from their checkpoint -----------

      const recovered = yield* store.running
      for (const execution of recovered) {
        const definition = byId.get(execution.workflowId)
        if (definition === undefined) {
          yield* fail(execution, `workflow ${execution.workflowId} is not registered`)
        } else {
          yield* Effect.logInfo("recovering workflow execution").pipe(
            Effect.annotateLogs({ workflowId: definition.id, executionId: execution.id })
          )
          yield* launch(definition, execution)
        }
      }

      const span = (name: string, workflowId: string) =>
        <A, E, R>(effect: Effect.Effect<A, E, R>) =>
          Effect.withSpan(effect, `WorkflowEngine.${name}`, { captureStackTrace: false, attributes: { "entity.type": "workflow", "entity.id": workflowId } })

      const notRunning = (execution: Execution) =>
        new BadRequest({ message: `Execution ${execution.id} is ${execution.status}` })

      return WorkflowEngine.of({
        list: Effect.sync(() =>
          workflows.map((definition) => ({
            id: definition.id,
            name: definition.name,
            purpose: definition.purpose,
            stepsCount: definition.steps.length,
            status: "idle" as const
          }))
        ),
        details: (id) =>
          Effect.map(findWorkflow(id), (definition) => ({
            id: definition.id,
            name: definition.name,
            purpose: definition.purpose,
            stepsCount: definition.steps.length,
            status: "idle" as const,
            steps: definition.steps.map(describeStep),
            inputSchema: toJsonSchema(definition.input)!,
            suspendSchema: toJsonSchema(definition.suspendSchema) ?? null,
            resumeSchema: toJsonSchema(definition.resumeSchema) ?? null
          })),

        execute: (id, request, options) =>
          Effect.gen(function*() {
            const { definition, execution } = yield* prepare(id, request, options)
            return yield* settleAfter(execution.id, start(definition, execution))
          }).pipe(span("execute", id)),

        run: (id, request, options) =>
          Effect.gen(function*() {
            const { definition, execution } = yield* prepare(id, request, options)
            yield* start(definition, execution)
            return { executionId: execution.id, workflowId: id, status: "running" as const, startAt: execution.createdAt }
          }).pipe(span("run", id)),

        stream: (id, request, options) =>
          Effect.map(prepare(id, request, options), ({ definition, execution }) =>
            Stream.unwrapScoped(Effect.gen(function*() {
              const queue = yield* PubSub.subscribe(yield* hubFor(execution.id))
              yield* start(definition, execution)
              return follow(execution.id, 0, Option.some(queue))
            }))).pipe(span("stream", id)),

        attach: (id, executionId, afterSeq) =>
          Effect.map(findExecution(id, executionId), () =>
            Stream.unwrapScoped(Effect.gen(function*() {
              const hub = hubs.get(executionId)
              const queue = hub === undefined ? Option.none() : Option.some(yield* PubSub.subscribe(hub))
              return follow(executionId, afterSeq, queue)
            }))).pipe(span("attach", id)),

        suspend: (id, executionId, reason) =>
          Effect.gen(function*() {
            const { definition, execution } = yield* findExecution(id, executionId)
            if (execution.status !== "running") return yield* notRunning(execution)
            yield* FiberMap.remove(fibers, executionId)
            const current = yield* reload(executionId)
            const stepIndex = Math.min(current.stepIndex, definition.steps.length - 1)
            const suspension = { suspendedAt: now(), reason, stepIndex, stepId: definition.steps[stepIndex].id }
            const suspended = event(execution, "workflow-suspended", suspension.stepId, "suspended", { stepIndex, reason })
            const seq = yield* store.suspend(executionId, suspension, suspended)
            if (Option.isNone(seq)) return yield* notRunning(yield* reload(executionId))
            yield* publish(executionId, seq.value, suspended)
            return { executionId, status: "suspended" as const, suspension: { suspendedAt: suspension.suspendedAt, reason } }
          }).pipe(span("suspend", id)),

        resume: (id, executionId, resumeData, stepId) =>
          Effect.gen(function*() {
            const { definition, execution } = yield* findExecution(id, executionId)
            const notSuspended = new NotFound({ message: `Execution ${executionId} is not suspended` })
            if (execution.status !== "suspended" || execution.suspension === undefined) return yield* notSuspended
            const stepIndex = stepId === undefined
              ? execution.suspension.stepIndex
              : definition.steps.findIndex((step) => step.id === stepId)
            if (stepIndex < 0) return yield* new BadRequest({ message: `Workflow ${id} has no step ${stepId}` })
            const schema = definition.steps[stepIndex].resumeSchema ?? definition.resumeSchema
            const decoded = schema === undefined
              ? resumeData
              : yield* Either.mapLeft(
                Schema.decodeUnknownEither(schema as Schema.Schema<unknown>, { errors: "all" })(resumeData),
                (error) => ValidationError.fromIssues(ParseResult.ArrayFormatter.formatErrorSync(error), ["resumeData"])
              )
            if (!(yield* store.claimResume(execution, { stepIndex, resumeData: decoded }))) return yield* notSuspended
            return yield* settleAfter(executionId, Effect.gen(function*() {
              const waiting = parked.get(executionId)
              if (waiting !== undefined && stepIndex === execution.suspension!.stepIndex) {
                yield* Deferred.succeed(waiting, { resumeData: decoded })
              } else {
                yield* FiberMap.remove(fibers, executionId)
                yield* launch(definition, yield* reload(executionId))
              }
            }))
          }).pipe(span("resume", id)),

        cancel: (id, executionId, reason) =>
          Effect.gen(function*() {
            const { execution } = yield* findExecution(id, executionId)
            if (execution.status !== "running" && execution.status !== "suspended") return yield* notRunning(execution)
            yield* FiberMap.remove(fibers, executionId)
            const cancelled = event(execution, "workflow-cancelled", execution.workflowName, "cancelled", { reason })
            const seq = yield* store.cancel(executionId, cancelled)
            if (Option.isNone(seq)) return yield* notRunning(yield* reload(executionId))
            yield* publish(executionId, seq.value, cancelled)
            yield* Effect.logInfo(`workflow cancelled: ${reason}`).pipe(Effect.annotateLogs({ workflowId: id, executionId }))
            return { executionId, status: "cancelled" as const, cancelledAt: cancelled.timestamp, reason }
          }).pipe(span("cancel", id)),

        state: (id, executionId) =>
          Effect.map(findExecution(id, executionId), ({ execution }) => ({
            executionId,
            workflowId: id,
            status: execution.status,
            startAt: execution.createdAt,
            ...(execution.status === "suspended" && execution.suspension
              ? {
                suspension: {
                  suspendedAt: execution.suspension.suspendedAt,
                  reason: execution.suspension.reason,
                  stepIndex: execution.suspension.stepIndex,
                  stepId: execution.suspension.stepId
                }
              }
              : {}),
            input: execution.input,
            context: execution.context,
            ...(execution.endedAt ? { endAt: execution.endedAt } : {}),
            ...(execution.status === "completed" ? { result: execution.output ?? null } : {}),
            ...(execution.error ? { error: execution.error } : {})
          })).pipe(span("state", id)),

        executions: (query) =>
          Effect.gen(function*() {
            if (query.workflowId !== undefined) yield* findWorkflow(query.workflowId)
            const executions = yield* store.list(query)
            const events = yield* store.eventsOf(executions.map((e) => e.id))
            return executions.map((execution) => ({
              id: execution.id,
              workflowId: execution.workflowId,
              workflowName: execution.workflowName,
              status: execution.status,
              input: execution.input,
              metadata: execution.metadata,
              events: (events.get(execution.id) ?? []).map(({ event: e, seq }) => ({
                id: String(seq),
                type: e.type,
                name: e.from,
                from: e.from,
                startTime: e.timestamp,
                endTime: e.timestamp,
                status: e.status,
                ...(e.input !== undefined ? { input: e.input } : {}),
                ...(e.output !== undefined ? { output: e.output } : {})
              })),
              ...(execution.status === "completed" ? { output: execution.output ?? null } : {}),
              createdAt: execution.createdAt,
              updatedAt: execution.updatedAt
            }))
          }).pipe(Effect.withSpan("WorkflowEngine.executions", { captureStackTrace: false }))
      })
    })
  )

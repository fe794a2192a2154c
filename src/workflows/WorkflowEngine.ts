import { Context, Effect, Either, Fiber, Layer, Option, ParseResult, Queue, Schema, Stream } from "effect"
import { BadRequest, InternalError, NotFound, ValidationError, WorkflowFailed } from "../errors.js"
import type { SseFrame } from "../http/sse.js"
import { makeExecutionDriver, now, workflowEvent } from "./ExecutionDriver.js"
import { makeExecutionHubs } from "./ExecutionHubs.js"
import { type Execution, type ExecutionQuery, ExecutionStore, type StoredEvent } from "./ExecutionStore.js"
import { describeStep, recordOf, resultFrame, resultOf, stateOf, toJsonSchema } from "./ExecutionViews.js"
import { decodeInput } from "./runner.js"
import type { WorkflowDefinition } from "./Workflow.js"
import type * as S from "./WorkflowSchemas.js"

const SETTLING = new Set(["workflow-suspended", "workflow-complete", "workflow-error", "workflow-cancelled"])

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
  ) => Effect.Effect<S.ExecutionResult, NotFound | ValidationError | BadRequest | WorkflowFailed | InternalError>
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
  ) => Effect.Effect<Stream.Stream<SseFrame, BadRequest>, NotFound | ValidationError | BadRequest>
  /** Replays the events after `afterSeq`, then follows live ones until the execution settles. */
  readonly attach: (id: string, executionId: string, afterSeq: number) => Effect.Effect<Stream.Stream<SseFrame>, NotFound>
  readonly suspend: (id: string, executionId: string, reason: string) => Effect.Effect<typeof S.SuspendResult.Type, NotFound | BadRequest>
  readonly resume: (
    id: string,
    executionId: string,
    resumeData: unknown,
    stepId?: string
  ) => Effect.Effect<S.ExecutionResult, NotFound | ValidationError | BadRequest | WorkflowFailed | InternalError>
  readonly cancel: (id: string, executionId: string, reason: string) => Effect.Effect<typeof S.CancelResult.Type, NotFound | BadRequest>
  readonly state: (id: string, executionId: string) => Effect.Effect<typeof S.ExecutionState.Type, NotFound>
  readonly executions: (query: ExecutionQuery) => Effect.Effect<ReadonlyArray<typeof S.ExecutionRecord.Type>, NotFound>
  /** How many executions have live listeners (event hubs in memory): for tests and diagnostics. */
  readonly liveEventHubs: Effect.Effect<number>
}>() {}

export const WorkflowEngineLive = (workflows: ReadonlyArray<WorkflowDefinition>) =>
  Layer.scoped(
    WorkflowEngine,
    Effect.gen(function*() {
      const store = yield* ExecutionStore
      const hubs = yield* makeExecutionHubs
      const driver = yield* makeExecutionDriver(hubs)
      const { fail, launch, record } = driver
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

      const reload = (id: string) => Effect.map(store.get(id), Option.getOrThrow)

      // --- waiting for an execution -------------------------------------------------------------------

      const untilSettling = (events: Queue.Dequeue<StoredEvent>) =>
        Effect.repeat(Queue.take(events), { until: (entry) => SETTLING.has(entry.event.type) })

      /**
       * Completes when `fiber` has ended while the execution is still running at `version`: it died
       * (its failure path too, e.g. the store failing) and nobody will publish the settling event.
       * Cancel and suspend store their transition before they interrupt the fiber, so a fiber they end
       * leaves the row settled.
       */
      const diedUnsettled = (id: string, version: number, fiber: Option.Option<Fiber.RuntimeFiber<void>>) =>
        Option.match(fiber, {
          onNone: () => Effect.never,
          onSome: (running) =>
            Effect.gen(function*() {
              yield* Fiber.await(running)
              const after = yield* reload(id)
              if (after.status !== "running" || after.version !== version) return yield* Effect.never
            })
        })

      /**
       * Subscribes to the execution's events, runs `action` (which starts or wakes its fiber) and waits
       * until the execution settles. The row is re-read after acting, so a settle that came first is not
       * missed; a fiber that dies without settling is a 500, never a hung request.
       */
      const settleAfter = <E>(id: string, action: Effect.Effect<Option.Option<Fiber.RuntimeFiber<void>>, E>) =>
        Effect.scoped(Effect.gen(function*() {
          const events = yield* hubs.subscribe(id)
          const fiber = yield* action
          let current = yield* reload(id)
          if (current.status === "running") {
            const died = yield* Effect.raceFirst(
              Effect.as(untilSettling(events), false),
              Effect.as(diedUnsettled(id, current.version, fiber), true)
            )
            if (died) {
              yield* Effect.logError("workflow execution ended without settling").pipe(Effect.annotateLogs({ executionId: id }))
              return yield* InternalError.generic
            }
            current = yield* reload(id)
          }
          return yield* resultOf(current)
        }))

      /** The events after `afterSeq` until the execution settles, then the workflow-result frame. */
      const follow = (id: string, afterSeq: number, events: Queue.Dequeue<StoredEvent>, fiber: Option.Option<Fiber.RuntimeFiber<void>>) =>
        Stream.unwrap(Effect.gen(function*() {
          const before = yield* reload(id)
          const stored = yield* store.events(id, afterSeq)
          const lastStored = stored.at(-1)?.seq ?? afterSeq
          const settledSince = stored.some((entry) => entry.seq > before.lastSeq && SETTLING.has(entry.event.type))
          const live = before.status === "running" && !settledSince
            ? Stream.fromQueue(events).pipe(
              Stream.filter((entry) => entry.seq > lastStored),
              Stream.takeUntil((entry) => SETTLING.has(entry.event.type)),
              Stream.interruptWhen(diedUnsettled(id, before.version, fiber))
            )
            : Stream.empty
          return Stream.concat(
            Stream.map(Stream.concat(Stream.fromIterable(stored), live), (entry): SseFrame => ({ id: entry.seq, data: entry.event })),
            Stream.fromEffect(Effect.map(reload(id), resultFrame))
          )
        }))

      // --- starting -----------------------------------------------------------------------------------

      const prepare = (workflowId: string, request: S.ExecuteRequest, options: StartOptions = {}) =>
        Effect.gen(function*() {
          const definition = yield* findWorkflow(workflowId)
          const input = yield* decodeInput(definition, request.input)
          const id = request.options?.executionId ?? crypto.randomUUID()
          if (yield* store.exists(id)) return yield* alreadyExists(id)
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
            lastSeq: 1,
            createdAt,
            updatedAt: createdAt
          }
          return { definition, execution }
        })

      const alreadyExists = (id: string) => new BadRequest({ message: `Execution ${id} already exists` })

      /** Stores the execution with its first event and launches its fiber; uninterruptible, so never one without the other. */
      const start = (definition: WorkflowDefinition, execution: Execution) =>
        Effect.uninterruptible(Effect.gen(function*() {
          const started = workflowEvent(execution, "workflow-start", definition.name, "running", { input: execution.input })
          if (Option.isNone(yield* record(execution.id, started, store.create(execution, started)))) {
            return yield* alreadyExists(execution.id)
          }
          yield* Effect.logInfo("workflow started").pipe(
            Effect.annotateLogs({ workflowId: definition.id, executionId: execution.id })
          )
          return yield* launch(definition, execution)
        }))

      // --- recovery: executions a dead process left running continue from their checkpoint -----------

      const recovered = yield* store.running
      for (const execution of recovered) {
        const definition = byId.get(execution.workflowId)
        if (definition === undefined) {
          yield* fail(execution, execution, `workflow ${execution.workflowId} is not registered`)
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
            return yield* settleAfter(execution.id, Effect.map(start(definition, execution), Option.some))
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
              const events = yield* hubs.subscribe(execution.id)
              const fiber = yield* start(definition, execution)
              return follow(execution.id, 0, events, Option.some(fiber))
            }))).pipe(span("stream", id)),

        attach: (id, executionId, afterSeq) =>
          Effect.map(findExecution(id, executionId), () =>
            Stream.unwrapScoped(Effect.gen(function*() {
              const events = yield* hubs.subscribe(executionId)
              return follow(executionId, afterSeq, events, driver.fiberOf(executionId))
            }))).pipe(span("attach", id)),

        suspend: (id, executionId, reason) =>
          Effect.gen(function*() {
            const found = yield* findExecution(id, executionId)
            const steps = found.definition.steps
            let execution = found.execution
            // The suspension is stored first (at the step the row is at, which a concurrent checkpoint
            // may move on: then read again), then the fiber is interrupted: its later writes are refused.
            while (execution.status === "running") {
              const stepIndex = Math.min(execution.stepIndex, steps.length - 1)
              const suspension = { suspendedAt: now(), reason, stepIndex, stepId: steps[stepIndex].id }
              const suspended = workflowEvent(execution, "workflow-suspended", suspension.stepId, "suspended", { stepIndex, reason })
              const claim = { id: executionId, version: execution.version, atStep: execution.stepIndex }
              const stored = yield* Effect.uninterruptible(Effect.tap(
                record(executionId, suspended, store.suspend(claim, suspension, suspended)),
                (seq) => Option.isSome(seq) ? driver.stop(executionId) : Effect.void
              ))
              if (Option.isSome(stored)) {
                return { executionId, status: "suspended" as const, suspension: { suspendedAt: suspension.suspendedAt, reason } }
              }
              execution = yield* reload(executionId)
            }
            return yield* notRunning(execution)
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
            // Claim and wake-up are one uninterruptible action: a claimed execution always has a fiber.
            return yield* settleAfter(executionId, Effect.uninterruptible(Effect.gen(function*() {
              const claimed = yield* store.claimResume(execution, { stepIndex, resumeData: decoded })
              if (Option.isNone(claimed)) return yield* notSuspended
              return yield* driver.continueClaimed(definition, claimed.value, decoded, execution.suspension!.stepIndex)
            })))
          }).pipe(span("resume", id)),

        cancel: (id, executionId, reason) =>
          Effect.gen(function*() {
            const { execution } = yield* findExecution(id, executionId)
            if (execution.status !== "running" && execution.status !== "suspended") return yield* notRunning(execution)
            const cancelled = workflowEvent(execution, "workflow-cancelled", execution.workflowName, "cancelled", { reason })
            // Stored first, then the fiber is interrupted: a fiber launched meanwhile has its first write refused.
            const stored = yield* Effect.uninterruptible(Effect.tap(
              record(executionId, cancelled, store.cancel(executionId, cancelled)),
              (seq) => Option.isSome(seq) ? driver.stop(executionId) : Effect.void
            ))
            if (Option.isNone(stored)) return yield* notRunning(yield* reload(executionId))
            yield* Effect.logInfo(`workflow cancelled: ${reason}`).pipe(Effect.annotateLogs({ workflowId: id, executionId }))
            return { executionId, status: "cancelled" as const, cancelledAt: cancelled.timestamp, reason }
          }).pipe(span("cancel", id)),

        state: (id, executionId) =>
          Effect.map(findExecution(id, executionId), ({ execution }) => stateOf(id, execution)).pipe(span("state", id)),

        executions: (query) =>
          Effect.gen(function*() {
            if (query.workflowId !== undefined) yield* findWorkflow(query.workflowId)
            const executions = yield* store.list(query)
            const events = yield* store.eventsOf(executions.map((e) => e.id))
            return executions.map((execution) => recordOf(execution, events.get(execution.id) ?? []))
          }).pipe(Effect.withSpan("WorkflowEngine.executions", { captureStackTrace: false })),

        liveEventHubs: hubs.size
      })
    })
  )

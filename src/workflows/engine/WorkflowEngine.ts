// src/workflows/engine: the WorkflowEngine service: the layer that wires execution/, steps/,
// schedules/ and concurrency/ together, its contract (the calls by id), the typed calls and the
// registered workflows. It may import every other workflows folder but api/'s edge (WorkflowsApi,
// handlers); only api/ and schedules/Schedules (the API that starts the executions) import its layer.
import { Context, Effect, Layer, Option } from "effect"
import { canSee, EVERYONE, type Visibility } from "../../auth/Ownership.js"
import { ServerConfig } from "../../config/ServerConfig.js"
import { BadRequest, NotFound } from "../../core/errors.js"
import { getOrNotFound } from "../../core/lookup.js"
import { Lifecycle } from "../../health/Lifecycle.js"
import { markedSpanMessage, withoutFieldsInSpan } from "../../observability/errorDetail.js"
import { countExecution } from "../../observability/metrics/instruments.js"
import type * as S from "../api/WorkflowSchemas.js"
import { makeConcurrencyGate } from "../concurrency/ConcurrencyGate.js"
import { makeExecuteWait } from "../execution/ExecuteWait.js"
import { makeExecutionDriver, workflowEvent } from "../execution/ExecutionDriver.js"
import { makeExecutionHubs } from "../execution/ExecutionHubs.js"
import { makeExecutionJoin } from "../execution/ExecutionJoin.js"
import { makeExecutionNotices } from "../execution/ExecutionNotices.js"
import { makeExecutionRecords } from "../execution/ExecutionRecords.js"
import { makeExecutionReplay } from "../execution/ExecutionReplay.js"
import { makeExecutionResume } from "../execution/ExecutionResume.js"
import { makeExecutionStart } from "../execution/ExecutionStart.js"
import { type Execution, type ExecutionQuery, ExecutionStore } from "../execution/ExecutionStore.js"
import { startExecutionSupervisor } from "../execution/ExecutionSupervisor.js"
import { describeStep, stateOf, toJsonSchema } from "../execution/ExecutionViews.js"
import { makeExecutionWatch } from "../execution/ExecutionWatch.js"
import { makeInstanceRegistry } from "../execution/InstanceRegistry.js"
import { retryingRead } from "../execution/storeRetry.js"
import { scheduleMinIntervalMs } from "../schedules/ScheduleCron.js"
import { startScheduleFiring } from "../schedules/ScheduleFiring.js"
import { startApprovalExpiry } from "../steps/ApprovalExpiry.js"
import { hookBase } from "../steps/Hooks.js"
import { makeWorkflowTimers } from "../steps/SleepTimers.js"
import { byIdOf, RegisteredWorkflows } from "./RegisteredWorkflows.js"
import { makeTypedCalls, type TypedCalls } from "./TypedCalls.js"
import type { StartOptions, WorkflowEngineCore } from "./WorkflowEngineContract.js"

export { RegisteredWorkflows } from "./RegisteredWorkflows.js"
export type { StartOptions } from "./WorkflowEngineContract.js"

/**
 * What the workflow engine offers (the WorkflowEngine tag's service): the calls by id, and the typed
 * ones by reference (`executeWorkflow`, `runWorkflow`, `resumeWorkflow`) for Effect code.
 */
export interface WorkflowEngineService extends WorkflowEngineCore, TypedCalls {}

export class WorkflowEngine extends Context.Tag("WorkflowEngine")<WorkflowEngine, WorkflowEngineService>() {}

/** How this instance shares the store with others: `instanceId` and `workflows` (lease, poll, drain) of ServerConfig. */
export const WorkflowEngineLive = Layer.scoped(
  WorkflowEngine,
  Effect.gen(function*() {
    const { instanceId, recordContent, workflows: settings } = yield* ServerConfig
    const { pollMs } = settings
    const store = yield* ExecutionStore
    const byId = yield* Effect.flatMap(RegisteredWorkflows, byIdOf)
    const registry = yield* makeInstanceRegistry(instanceId, { leaseMs: settings.leaseMs, pollMs })
    // Before anything here claims: what a previous process with this id left running is orphaned (taken below).
    const left = yield* store.releaseLeftBy(instanceId)
    if (left > 0) {
      yield* Effect.logInfo(
        `${left} workflow executions left running by a previous process with this instance id: released to be taken over`
      )
    }
    const notices = yield* makeExecutionNotices(instanceId)
    const hubs = yield* makeExecutionHubs
    const timers = yield* makeWorkflowTimers(instanceId, pollMs)
    // An instance told to drain (Lifecycle, when the service has one) claims and admits nothing more.
    const lifecycle = yield* Effect.serviceOption(Lifecycle)
    const leaving = Option.match(lifecycle, { onNone: () => Effect.succeed(false), onSome: (l) => l.draining })
    const gate = yield* makeConcurrencyGate({
      driver: yield* makeExecutionDriver(
        hubs,
        notices,
        instanceId,
        settings.maxExecutionBytes,
        recordContent,
        timers.park
      ),
      workflows: byId,
      instanceId,
      pollMs,
      leaving,
      maxQueued: settings.maxQueuedPerKey
    })
    const { driver } = gate
    const watch = yield* makeExecutionWatch(hubs)
    const { follow, reload, replay, settleAfter } = watch
    const records = makeExecutionRecords(store, settings.recordReadsPerOwner)
    const { hold } = makeExecuteWait({ store, fiberOf: driver.fiberOf, waitMs: settings.executeWaitMs, pollMs })

    const findWorkflow = (id: string) => getOrNotFound(byId, "Workflow", id)

    const findExecution = (workflowId: string, executionId: string, visibility: Visibility = EVERYONE) =>
      Effect.gen(function*() {
        const definition = yield* findWorkflow(workflowId)
        const execution = yield* retryingRead(store.get(executionId))
        if (
          Option.isNone(execution) || execution.value.workflowId !== workflowId ||
          !canSee(visibility, execution.value.userId)
        ) {
          return yield* NotFound.of("Execution", executionId)
        }
        return { definition, execution: execution.value }
      })

    const { prepare, startIfNew, start } = makeExecutionStart({ store, gate, instanceId, findWorkflow })

    const { resume } = makeExecutionResume({ store, gate, instanceId, settleAfter, findExecution })
    const join = makeExecutionJoin({ store, watch, startIfNew, fiberOf: driver.fiberOf })
    const replays = makeExecutionReplay({ store, instanceId, findExecution, startIfNew })

    // Executions a dead process left running continue here from their checkpoint; with several
    // instances, those of any instance that dies, and streams here follow executions run elsewhere.
    yield* startExecutionSupervisor({
      registry,
      notices,
      hubs,
      driver,
      workflows: byId,
      pollMs,
      leaseMs: settings.leaseMs,
      leaving
    })
    yield* timers.start({ driver, workflows: byId, leaving })
    yield* startApprovalExpiry({ driver, workflows: byId, leaving, dueWork: timers.dueWork, instanceId })
    const minIntervalMs = scheduleMinIntervalMs(yield* ServerConfig)
    yield* startScheduleFiring({
      driver,
      workflows: byId,
      leaving,
      dueWork: timers.dueWork,
      instanceId,
      minIntervalMs,
      gate
    })
    // Runs first on shutdown (finalizers run in reverse): steps finish, then executions are handed over.
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(
        driver.drain(settings.drainMs),
        (released) =>
          released.length === 0 ? Effect.void : Effect.zipRight(
            notices.released(released),
            Effect.logInfo(
              `shutting down: released ${released.length} running workflow executions to the other instances`
            )
          )
      )
    )

    /** The attributes of an operation's span on a workflow: the trace index files the trace under it. */
    const onWorkflow = (workflowId: string) =>
      Effect.annotateCurrentSpan({ "entity.type": "workflow", "entity.id": workflowId })

    const notRunning = (execution: Execution) =>
      new BadRequest({
        message: `Execution ${execution.id} is ${
          execution.queuedAt !== undefined ? "queued for a concurrency slot" : execution.status
        }`
      })

    const core: WorkflowEngineCore = {
      list: Effect.sync(() =>
        [...byId.values()].map((definition) => ({
          id: definition.id,
          name: definition.name,
          purpose: definition.purpose,
          stepsCount: definition.steps.length,
          status: "idle" as const
        }))
      ).pipe(Effect.withSpan("WorkflowEngine.list", { captureStackTrace: false })),
      details: Effect.fn("WorkflowEngine.details", { captureStackTrace: false })(function*(id: string) {
        yield* Effect.annotateCurrentSpan("workflow.id", id)
        const definition = yield* findWorkflow(id)
        return {
          id: definition.id,
          name: definition.name,
          purpose: definition.purpose,
          stepsCount: definition.steps.length,
          status: "idle" as const,
          steps: definition.steps.map(describeStep),
          inputSchema: toJsonSchema(definition.input)!,
          suspendSchema: toJsonSchema(definition.suspendSchema) ?? null,
          resumeSchema: toJsonSchema(definition.resumeSchema) ?? null
        }
      }),

      execute: (id: string, request: S.ExecuteRequest, options?: StartOptions) =>
        withoutFieldsInSpan(
          Effect.gen(function*() {
            yield* onWorkflow(id)
            const { definition, execution } = yield* prepare(id, request, options)
            const settle = (launched: Effect.Effect<void>) =>
              options?.idempotent !== undefined
                ? Effect.zipRight(launched, join.execute(definition, execution))
                : settleAfter(execution.id, 0, Effect.tap(start(definition, execution), () => launched))
            return yield* hold(execution.id, options?.wait, settle)
          }),
          "WorkflowEngine.execute",
          { captureStackTrace: false },
          markedSpanMessage
        ),

      run: Effect.fn("WorkflowEngine.run", { captureStackTrace: false })(
        function*(id: string, request: S.ExecuteRequest, options?: StartOptions) {
          yield* onWorkflow(id)
          const { definition, execution } = yield* prepare(id, request, options)
          if (options?.idempotent !== undefined) return yield* join.run(definition, execution)
          const { queued } = yield* start(definition, execution)
          const waiting = queued ? { waiting: "concurrency" as const, queuedAt: execution.createdAt } : {}
          return {
            executionId: execution.id,
            workflowId: id,
            status: "running" as const,
            startAt: execution.createdAt,
            ...waiting
          }
        }
      ),

      stream: Effect.fn("WorkflowEngine.stream", { captureStackTrace: false })(
        function*(id: string, request: S.ExecuteRequest, options?: StartOptions) {
          yield* onWorkflow(id)
          const { definition, execution } = yield* prepare(id, request, options, true)
          if (options?.idempotent !== undefined) return yield* join.stream(definition, execution)
          return follow(execution, 0, Effect.map(start(definition, execution), ({ fiber }) => Option.some(fiber)))
        }
      ),

      attach: Effect.fn("WorkflowEngine.attach", { captureStackTrace: false })(
        function*(id: string, executionId: string, afterSeq: number, visibility?: Visibility) {
          yield* onWorkflow(id)
          const { execution } = yield* findExecution(id, executionId, visibility)
          if (execution.status !== "running") return yield* replay(execution, afterSeq)
          return follow(execution, afterSeq, Effect.sync(() => driver.fiberOf(executionId)))
        }
      ),

      suspend: Effect.fn("WorkflowEngine.suspend", { captureStackTrace: false })(
        function*(id: string, executionId: string, reason: string, visibility?: Visibility) {
          yield* onWorkflow(id)
          const found = yield* findExecution(id, executionId, visibility)
          const steps = found.definition.steps
          let execution = found.execution
          // The suspension is stored first (at the step the row is at, which a concurrent checkpoint
          // may move on: then read again), then the fiber is interrupted: its later writes are refused.
          // A queued one (issue #33) has no step running: cancel it instead.
          while (execution.status === "running" && execution.queuedAt === undefined) {
            const stepIndex = Math.min(execution.stepIndex, steps.length - 1)
            const suspended = workflowEvent(execution, "workflow-suspended", steps[stepIndex].id, "suspended", {
              stepIndex,
              reason
            })
            const suspension = { suspendedAt: suspended.timestamp, reason, stepIndex, stepId: suspended.from }
            const claim = { id: executionId, version: execution.version, atStep: execution.stepIndex }
            const stored = yield* Effect.uninterruptible(Effect.tap(
              driver.recordRetrying(executionId, [suspended], store.suspend(claim, suspension, suspended)),
              (seq) => Option.isSome(seq) ? driver.stop(executionId) : Effect.void
            ))
            if (Option.isSome(stored)) {
              yield* driver.hook(found.definition, "onSuspend", {
                ...hookBase(execution),
                stepId: suspension.stepId,
                reason,
                data: undefined
              })
              return {
                executionId,
                status: "suspended" as const,
                suspension: { suspendedAt: suspension.suspendedAt, reason }
              }
            }
            execution = yield* reload(executionId)
          }
          return yield* notRunning(execution)
        }
      ),

      resume: (id: string, executionId: string, resumeData: unknown, stepId?: string, visibility?: Visibility) =>
        withoutFieldsInSpan(
          Effect.zipRight(onWorkflow(id), resume(id, executionId, resumeData, stepId, visibility)),
          "WorkflowEngine.resume",
          { captureStackTrace: false },
          markedSpanMessage
        ),

      cancel: Effect.fn("WorkflowEngine.cancel", { captureStackTrace: false })(
        function*(id: string, executionId: string, reason: string, visibility?: Visibility) {
          yield* onWorkflow(id)
          const { execution } = yield* findExecution(id, executionId, visibility)
          if (execution.status !== "running" && execution.status !== "suspended") return yield* notRunning(execution)
          const cancelled = workflowEvent(execution, "workflow-cancelled", execution.workflowName, "cancelled", {
            reason
          })
          // Stored first, then the fiber is interrupted: a fiber launched meanwhile has its first write refused.
          const stored = yield* Effect.uninterruptible(Effect.tap(
            driver.recordRetrying(executionId, [cancelled], store.cancel(executionId, cancelled)),
            (seq) => Option.isSome(seq) ? driver.stop(executionId) : Effect.void
          ))
          if (Option.isNone(stored)) return yield* notRunning(yield* reload(executionId))
          yield* countExecution("cancelled")
          yield* Effect.logInfo(`workflow cancelled: ${reason}`).pipe(
            Effect.annotateLogs({ workflowId: id, executionId })
          )
          return { executionId, status: "cancelled" as const, cancelledAt: cancelled.timestamp, reason }
        }
      ),

      remove: Effect.fn("WorkflowEngine.remove", { captureStackTrace: false })(
        function*(id: string, executionId: string, visibility?: Visibility) {
          yield* onWorkflow(id)
          const { execution } = yield* findExecution(id, executionId, visibility)
          if (execution.status === "running" || execution.status === "suspended") {
            return yield* new BadRequest({
              message:
                `Execution ${executionId} is ${execution.status}: only finished executions (completed, error, cancelled) can be deleted; cancel it first`
            })
          }
          // Only a concurrent delete can make this false: a finished execution never runs again.
          if (!(yield* store.remove(executionId))) return yield* NotFound.of("Execution", executionId)
          yield* Effect.logInfo("workflow execution deleted").pipe(Effect.annotateLogs({ workflowId: id, executionId }))
          return { executionId, workflowId: id, deleted: true as const }
        }
      ),

      state: Effect.fn("WorkflowEngine.state", { captureStackTrace: false })(
        function*(id: string, executionId: string, visibility?: Visibility) {
          yield* onWorkflow(id)
          const { execution } = yield* findExecution(id, executionId, visibility)
          const replaysOf = yield* store.replaysOf(
            [executionId],
            visibility === undefined || visibility.all ? undefined : visibility.userId
          )
          return stateOf(id, execution, replaysOf.get(executionId))
        }
      ),

      events: Effect.fn("WorkflowEngine.events", { captureStackTrace: false })(
        function*(
          id: string,
          executionId: string,
          page: { readonly afterSeq: number; readonly limit: number },
          visibility?: Visibility
        ) {
          yield* onWorkflow(id)
          const { execution } = yield* findExecution(id, executionId, visibility)
          // At most `limit` events and 256 KiB of them (or one larger event): a next page is one the row's last number is past.
          const events = yield* retryingRead(store.eventPage(executionId, page.afterSeq, undefined, page.limit))
          const last = events.at(-1)?.seq
          return {
            events: events.map(({ event, seq }) => ({ id: String(seq), ...event })),
            nextAfter: last !== undefined && last < execution.lastSeq ? last : null
          }
        }
      ),

      executions: Effect.fn("WorkflowEngine.executions", { captureStackTrace: false })(
        function*(query: ExecutionQuery) {
          if (query.workflowId !== undefined) yield* findWorkflow(query.workflowId)
          return yield* records.list(query)
        }
      ),
      record: Effect.fn("WorkflowEngine.record", { captureStackTrace: false })(records.record),
      replay: replays.replay,
      restart: replays.restart,

      liveEventHubs: hubs.size
    }
    return WorkflowEngine.of({ ...core, ...makeTypedCalls(core, byId) })
  })
)

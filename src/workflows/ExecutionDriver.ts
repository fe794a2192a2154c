import { Deferred, Effect, Either, Fiber, FiberMap, Option, ParseResult, Schema } from "effect"
import { AgentRegistry } from "../agents/AgentRegistry.js"
import type { ExecutionHubs } from "./ExecutionHubs.js"
import { type Claim, type Execution, ExecutionStore } from "./ExecutionStore.js"
import { runStep, StepFailed, type StepEnv } from "./runner.js"
import type { WorkflowDefinition } from "./Workflow.js"
import type * as S from "./WorkflowSchemas.js"

/** Parked (self-suspended) fibers kept in memory; past this the oldest is let go and resumes from its checkpoint. */
const MAX_PARKED = 10_000

/** What wakes a parked fiber: the resume data and the version the resume claimed the execution at. */
interface ResumeSignal {
  readonly resumeData: unknown
  readonly version: number
}

export const now = () => new Date().toISOString()

export const workflowEvent = (
  execution: { readonly id: string },
  type: S.WorkflowEvent["type"],
  from: string,
  status: string,
  extra: Partial<S.WorkflowEvent> = {}
): S.WorkflowEvent => ({ type, executionId: execution.id, from, timestamp: now(), status, ...extra })

/**
 * Live executions: one fiber each in a FiberMap keyed by execution id (owned by the caller's scope, so
 * a request that goes away does not stop its execution), a self-suspended one parked on a Deferred.
 */
export const makeExecutionDriver = (hubs: ExecutionHubs) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore
    const agents = yield* AgentRegistry
    const fibers = yield* FiberMap.make<string, void, never>()
    const parked = new Map<string, Deferred.Deferred<ResumeSignal>>()
    /**
     * Runs a conditional store write and, when it applied, publishes its event. Uninterruptible, so an
     * event that is stored is also published (followers wait for the settling one).
     */
    const record = (id: string, entry: S.WorkflowEvent, write: Effect.Effect<Option.Option<number>>) =>
      Effect.uninterruptible(Effect.tap(write, (seq) =>
        Option.isSome(seq) ? hubs.publish(id, { seq: seq.value, event: entry }) : Effect.void
      ))

    // --- driving an execution -----------------------------------------------------------------------

    const park = (id: string) =>
      Effect.acquireUseRelease(
        Effect.gen(function*() {
          if (parked.size >= MAX_PARKED) {
            const oldest = parked.keys().next().value!
            parked.delete(oldest)
            // Interrupt that fiber, not whatever runs under its key later (a resume may launch one).
            const fiber = FiberMap.unsafeGet(fibers, oldest)
            if (Option.isSome(fiber)) yield* Effect.forkDaemon(Fiber.interrupt(fiber.value))
          }
          const deferred = yield* Deferred.make<ResumeSignal>()
          parked.set(id, deferred)
          return deferred
        }),
        Deferred.await,
        (deferred) => Effect.sync(() => parked.get(id) === deferred && parked.delete(id))
      )

    /** The parked fiber's wake-up, taken out so that neither eviction nor another resume can use it. */
    const takeParked = (id: string) =>
      Effect.sync(() => {
        const waiting = parked.get(id)
        parked.delete(id)
        return waiting
      })

    const checkResult = (definition: WorkflowDefinition, output: unknown) =>
      Either.mapLeft(
        Schema.decodeUnknownEither(definition.result as Schema.Schema<unknown>)(output),
        (error) => `result does not match the workflow's result schema: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
      )

    /**
     * Runs from the execution's checkpoint to its end, parking at each self-suspension. Every write is
     * conditional on the claim (running, at the version this fiber holds): a refused write means the
     * execution was cancelled or suspended from outside, and the fiber stops at once, runs no further
     * step and publishes nothing.
     */
    const drive = (definition: WorkflowDefinition, execution: Execution): Effect.Effect<void> =>
      Effect.suspend(() => {
        const id = execution.id
        let claim: Claim = { id, version: execution.version }
        return Effect.gen(function*() {
          const env: StepEnv = {
            agents,
            executionId: id,
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
            const started = workflowEvent(execution, "step-start", step.id, "running", { stepIndex: index, stepType: step.type, input: data })
            if (Option.isNone(yield* record(id, started, store.stepStarted(claim, started)))) return
            const outcome = yield* Effect.either(runStep(env, step, data, resumeData)).pipe(
              Effect.withSpan("workflow.step", { captureStackTrace: false,
                attributes: {
                  "entity.type": "workflow",
                  "entity.id": definition.id,
                  "execution.id": id,
                  "step.id": step.id,
                  "step.type": step.type,
                  "step.index": index
                }
              })
            )
            if (Either.isLeft(outcome)) {
              const failure = outcome.left
              if (failure instanceof StepFailed) {
                return yield* fail(claim, execution, `step ${failure.stepId}: ${failure.message}`)
              }
              const suspension = { suspendedAt: now(), reason: failure.reason, stepIndex: index, stepId: step.id, data: failure.data }
              const suspended = workflowEvent(execution, "workflow-suspended", step.id, "suspended", { stepIndex: index, reason: failure.reason })
              if (Option.isNone(yield* record(id, suspended, store.suspend({ ...claim, atStep: index }, suspension, suspended)))) return
              yield* Effect.logInfo(`workflow suspended at ${step.id}: ${failure.reason}`)
              const signal = yield* park(id)
              claim = { id, version: signal.version }
              resumeData = signal.resumeData
              continue
            }
            env.stepData[step.id] = outcome.right
            data = outcome.right
            resumeData = undefined
            index++
            const completed = workflowEvent(execution, "step-complete", step.id, "success", { stepIndex: index - 1, stepType: step.type, output: data })
            const checkpoint = { stepIndex: index, currentData: data, stepData: env.stepData }
            if (Option.isNone(yield* record(id, completed, store.checkpoint(claim, checkpoint, completed)))) return
          }
          const result = checkResult(definition, data)
          if (Either.isLeft(result)) return yield* fail(claim, execution, result.left)
          const done = workflowEvent(execution, "workflow-complete", definition.name, "success", { output: data })
          if (Option.isSome(yield* record(id, done, store.finish(claim, { status: "completed", output: data }, done)))) {
            yield* Effect.logInfo("workflow completed")
          }
        }).pipe(
          // When the store itself fails, this fails again and the fiber dies: its waiters see that.
          Effect.catchAllDefect((defect) =>
            Effect.zipRight(Effect.logError("workflow execution crashed", defect), fail(claim, execution, "Internal error"))
          )
        )
      }).pipe(
        Effect.annotateLogs({ workflowId: definition.id, executionId: execution.id }),
        Effect.withSpan("WorkflowEngine.drive", { captureStackTrace: false,
          attributes: { "entity.type": "workflow", "entity.id": definition.id, "execution.id": execution.id }
        })
      )

    const fail = (claim: Claim, execution: Execution, message: string) =>
      Effect.gen(function*() {
        const failed = workflowEvent(execution, "workflow-error", execution.workflowName, "error", { error: message })
        if (Option.isSome(yield* record(execution.id, failed, store.finish(claim, { status: "error", error: message }, failed)))) {
          yield* Effect.logWarning(`workflow failed: ${message}`)
        }
      })

    const launch = (definition: WorkflowDefinition, execution: Execution) =>
      FiberMap.run(fibers, execution.id, drive(definition, execution))

    return {
      record,
      launch,
      fail,
      /** The execution's fiber, if one runs or is parked. */
      fiberOf: (id: string) => FiberMap.unsafeGet(fibers, id),
      /** Interrupts the execution's fiber and waits for its end. */
      stop: (id: string) => FiberMap.remove(fibers, id),
      /**
       * Continues a claimed execution: wakes its parked fiber when it resumes at the step it parked at,
       * else replaces it with a fresh fiber from the claimed checkpoint. Gives the fiber to wait on.
       */
      continueClaimed: (definition: WorkflowDefinition, claimed: Execution, resumeData: unknown, parkedAtStep: number) =>
        Effect.gen(function*() {
          const waiting = yield* takeParked(claimed.id)
          if (waiting !== undefined && claimed.stepIndex === parkedAtStep) {
            yield* Deferred.succeed(waiting, { resumeData, version: claimed.version })
            return FiberMap.unsafeGet(fibers, claimed.id)
          }
          yield* FiberMap.remove(fibers, claimed.id)
          return Option.some(yield* launch(definition, claimed))
        })
    }
  })

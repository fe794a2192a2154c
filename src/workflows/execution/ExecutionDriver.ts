// src/workflows/execution: executions once started: the driver and its writes, the store and its rows,
// stored values and their codec, views, watch and hubs, replay, join, start and resume, the
// supervisor, instances and notices, idempotency keys, the tables' migrations. It may import
// definition/, steps/ (the driver runs steps), concurrency/ (start and resume pass its gate),
// engine/WorkflowEngineContract (StartOptions) and api/WorkflowSchemas (the wire's event and result
// shapes); nothing else of engine/ or api/.
import { Cause, Deferred, Duration, Effect, Either, Exit, Fiber, FiberMap, Option, Schedule } from "effect"
import { AgentRegistry } from "../../agents/AgentRegistry.js"
import type { WorkflowEvent } from "../api/WorkflowSchemas.js"
import type * as S from "../api/WorkflowSchemas.js"
import type { Step, WorkflowDefinition } from "../definition/WorkflowDefinition.js"
import { fireHook, hookBase, type HookEvents, type HookName } from "../steps/Hooks.js"
import { withInnerCheckpoints } from "../steps/innerDriver.js"
import { makeInnerOutputs } from "../steps/InnerOutputs.js"
import { policyStep } from "../steps/PolicyDriver.js"
import { runStep, type StepEnv } from "../steps/runner.js"
import type { SleepSignal } from "../steps/Sleep.js"
import { checkResult, endingEvent, stepStart, workflowEvent } from "./ExecutionEndings.js"
import type { ExecutionHubs } from "./ExecutionHubs.js"
import type { ExecutionNotices } from "./ExecutionNotices.js"
import type { LaunchOptions } from "./ExecutionRows.js"
import { type Claim, type Execution, ExecutionStore } from "./ExecutionStore.js"
import { makeExecutionWrites, StoreUnavailable } from "./ExecutionWrites.js"
import { restore, storedOutput } from "./StepCodec.js"
import { jsonBytes, outputRefusal } from "./StoredValues.js"
import { goOnDelay, isStoreDefect } from "./storeRetry.js"

export { openingEvents, workflowEvent } from "./ExecutionEndings.js"

/** How a fiber that died of a store failure waits for the store to answer again. */
const STORE_RETRY = Schedule.exponential("1 second").pipe(Schedule.either(Schedule.spaced("30 seconds")))

/** Parks an execution at a sleep step until its wake time (the timers, steps/SleepTimers.ts, implement it). */
export type Park = <E>(args: {
  readonly claim: Claim
  readonly execution: Execution
  readonly step: Step
  readonly index: number
  readonly signal: SleepSignal
  readonly checkpoint: (
    events: ReadonlyArray<WorkflowEvent>,
    write: Effect.Effect<Option.Option<number>>
  ) => Effect.Effect<Option.Option<number>, E>
}) => Effect.Effect<void, E>

/**
 * Live executions: one fiber each in a FiberMap keyed by execution id (owned by the caller's scope, so
 * a request that goes away does not stop its execution), each holding its execution's claim (this
 * instance as owner, at the version it was claimed at). A fiber runs until its execution settles and
 * then ends: a suspended execution holds nothing in memory, and its resume starts a fresh fiber from
 * the stored checkpoint.
 */
export const makeExecutionDriver = (
  hubs: ExecutionHubs,
  notices: ExecutionNotices,
  instanceId: string,
  maxBytes: number,
  recordContent = false,
  park?: Park
) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore
    const { checkpoint, ended, fail, open, publishStored, record, recordRetrying, suspend } =
      yield* makeExecutionWrites(
        hubs,
        notices,
        recordContent
      )
    const agents = yield* AgentRegistry
    const innerOutputs = yield* makeInnerOutputs
    const fibers = yield* FiberMap.make<string, void, never>()
    const scope = yield* Effect.scope
    const claims = new Map<string, Claim>()
    /** Set on shutdown: fibers give their executions up between steps instead of starting the next one. */
    let draining = false
    // Read through a call: it is set by `drain` while a drive fiber waits, which the compiler's narrowing does not see.
    const isDraining = () => draining
    /** Done when draining starts: a retry's back-off stops waiting and hands its execution over. */
    const drainStarted = yield* Deferred.make<void>()
    const released: Array<string> = []

    /**
     * Runs from the execution's checkpoint until it settles. Each step's output is committed, with its
     * step-complete and the next step's step-start (or the execution's end), in one write before the
     * next step runs. Every write is conditional on the claim (running, at the version this fiber
     * holds): a refused write means the execution was cancelled or suspended from outside, and the
     * fiber stops at once, runs no further step and publishes nothing. `startRecorded`: the first
     * step's step-start is already stored (the opening write or, `woken`, a sleeper's park holds it). The stored
     * values are decoded first (StepCodec); `checked`: the data the step gets came from another
     * predecessor (a resume at another step, a changed definition) and must fit, else the execution fails.
     */
    const drive = (
      definition: WorkflowDefinition,
      execution: Execution,
      claim: Claim,
      startRecorded: boolean,
      checked: boolean,
      woken: boolean
    ): Effect.Effect<void> =>
      Effect.suspend(() => {
        const id = execution.id
        const steps = definition.steps
        return Effect.gen(function*() {
          const restored = restore(definition, execution, checked)
          if (Either.isLeft(restored)) {
            return yield* fail(claim, execution, `cannot continue: ${restored.left}`, undefined, definition)
          }
          const env: StepEnv = {
            agents,
            executionId: id,
            input: restored.right.input,
            context: execution.context,
            user: execution.user,
            userId: execution.userId,
            stepData: restored.right.stepData,
            suspendSchema: definition.suspendSchema,
            // The committed wake time, only when it (re)starts at that sleep step: one reached again after a resume elsewhere evaluates anew.
            sleep: execution.sleep?.stepId === steps[execution.stepIndex]?.id ? execution.sleep : undefined
          }
          /** The `steps` record and the data as stored: encoded where their step has a schema. */
          const storedSteps: Record<string, unknown> = { ...execution.stepData }
          let stored = execution.currentData
          let index = execution.stepIndex
          let data = restored.right.data
          const resumeData = restored.right.resumeData
          let started = startRecorded
          let history = execution.historyBytes ?? 0
          // The opening write started it (a woken sleeper's step-start is stored too, but it started long ago).
          const opening = startRecorded && !woken
          if (opening) {
            yield* fireHook(definition, "onStart", { ...hookBase(execution), input: env.input }, scope)
          }
          if (index >= steps.length) {
            // Nothing left to run (a workflow without steps): only the ending remains.
            const ending = checkResult(definition, data)
            const event = endingEvent(definition, execution, ending)
            if (Option.isSome(yield* checkpoint(claim, [event], store.finish(claim, ending, event)))) {
              yield* ended(definition, execution, ending, data)
            }
            return
          }
          while (index < steps.length) {
            const step = steps[index]
            if (draining) {
              // Shutting down: the step output is committed; another instance continues from here.
              if (yield* store.release(claim)) {
                released.push(id)
              }
              return
            }
            if (!started) {
              const start = stepStart(definition, execution, index, stored)
              if (Option.isNone(yield* checkpoint(claim, [start], store.append(claim, [start])))) {
                return
              }
            }
            const commitWith = (events: ReadonlyArray<S.WorkflowEvent>, write: Effect.Effect<Option.Option<number>>) =>
              Effect.catchTag(checkpoint(claim, events, write), "StoreUnavailable", (error) => Effect.die(error.cause))
            const stepEnv = yield* withInnerCheckpoints(env, step, index, {
              outputs: innerOutputs,
              execution,
              claim,
              commitWith,
              fresh: opening || index !== execution.stepIndex,
              maxBytes
            })
            const run = (attempt: number, as = step) =>
              runStep({ ...stepEnv, attempt }, as, data, index === execution.stepIndex ? resumeData : undefined)
            const drained = Deferred.await(drainStarted)
            const policied = yield* policyStep({
              definition,
              execution,
              claim,
              step,
              index,
              data,
              run,
              recordContent,
              store,
              checkpoint,
              drained,
              parks: park !== undefined
            })
            // None: the claim was lost, or a drain stopped a back-off (its due time is committed): handed over.
            if (Option.isNone(policied)) {
              return isDraining() && (yield* store.release(claim))
                ? void released.push(id)
                : undefined
            }
            const outcome = policied.value
            if (Either.isLeft(outcome)) {
              const failure = outcome.left
              if (failure._tag === "StepFailed") {
                return yield* fail(
                  claim,
                  execution,
                  `step ${failure.stepId}: ${failure.message}`,
                  failure.detail,
                  definition
                )
              }
              if (failure._tag === "SleepSignal") {
                // Parked until its wake time (issue #31): the fiber ends, holding nothing (a child's sleep too: its steps run in order).
                if (park === undefined) {
                  return yield* fail(claim, execution, `step ${failure.stepId}: this engine has no durable timers`)
                }
                return yield* park({
                  claim,
                  execution,
                  step,
                  index,
                  signal: failure,
                  checkpoint: (events, write) => checkpoint(claim, events, write)
                })
              }
              return yield* suspend(claim, definition, execution, step, index, failure)
            }
            const output = storedOutput(definition, index, outcome.right, { live: data, stored }, env.stepData)
            if (Either.isLeft(output)) return yield* fail(claim, execution, output.left, undefined, definition)
            const outputBytes = jsonBytes(output.right.data)
            history += 2 * outputBytes
            const refusal = outputRefusal(outputBytes, history, maxBytes)
            if (refusal !== undefined) {
              return yield* fail(claim, execution, `step ${step.id}: ${refusal}`, undefined, definition)
            }
            env.stepData[step.id] = outcome.right
            Object.assign(storedSteps, output.right.entries, { [step.id]: output.right.data })
            data = outcome.right
            stored = output.right.data
            index++
            const completed = workflowEvent(execution, "step-complete", step.id, "success", {
              stepIndex: index - 1,
              stepType: step.type,
              output: stored
            })
            const stepCheckpoint = { stepIndex: index, currentData: stored, stepData: storedSteps }
            if (index < steps.length) {
              const events = [completed, stepStart(definition, execution, index, stored)]
              if (
                Option.isNone(yield* checkpoint(claim, events, store.advance(claim, stepCheckpoint, events)))
              ) {
                return
              }
              started = true
            } else {
              const ending = checkResult(definition, data)
              const events = [completed, endingEvent(definition, execution, ending)]
              if (
                Option.isSome(yield* checkpoint(claim, events, store.advance(claim, stepCheckpoint, events, ending)))
              ) {
                yield* ended(definition, execution, ending, data)
              }
            }
          }
        }).pipe(
          // A store that failed through the retries, wherever its SqlError surfaced (a step's agent
          // call writes memory too), is no verdict on the execution: the fiber dies, its waiters see
          // that, and the execution goes on from its checkpoint once the store answers (see launch).
          // Any other defect fails the execution.
          Effect.catchAllDefect((defect) =>
            isStoreDefect(defect)
              ? Effect.fail(new StoreUnavailable({ cause: defect }))
              : Effect.logError("workflow execution crashed", defect).pipe(
                Effect.zipRight(fail(claim, execution, "Internal error", undefined, definition)),
                Effect.zipRight(publishStored(id))
              )
          ),
          Effect.catchTag(
            "StoreUnavailable",
            (error) => Effect.zipRight(Effect.exit(publishStored(id)), Effect.die(error.cause))
          )
        )
      }).pipe(
        Effect.annotateLogs({ workflowId: definition.id, executionId: execution.id }),
        Effect.withSpan("WorkflowEngine.drive", {
          captureStackTrace: false,
          attributes: { "entity.type": "workflow", "entity.id": definition.id, "execution.id": execution.id }
        })
      )

    /**
     * On shutdown: no step starts any more; fibers get `graceMs` to finish the step they run (its output
     * is committed, then the execution released), then the rest are interrupted and released (their
     * step runs again wherever they are claimed). Answers the ids released.
     */
    const drain = (graceMs: number) =>
      Effect.gen(function*() {
        draining = true
        yield* Deferred.succeed(drainStarted, undefined)
        const running = Array.from(fibers, ([, fiber]) => fiber)
        // Interruptible: a finalizer runs uninterruptibly, where a timeout could not stop the wait.
        yield* Effect.timeout(Effect.interruptible(Fiber.awaitAll(running)), Duration.millis(graceMs)).pipe(
          Effect.ignore
        )
        const left = Array.from(claims.values())
        yield* FiberMap.clear(fibers)
        for (const claim of left) {
          if (yield* store.release(claim)) released.push(claim.id)
        }
        return released.splice(0)
      })

    /**
     * Starts (or replaces) the execution's fiber from its stored checkpoint, holding it as claimed (a
     * fresh execution whose opening write holds its first step-start, or one recovered or resumed).
     */
    const launch = (
      definition: WorkflowDefinition,
      execution: Execution,
      options: LaunchOptions
    ): Effect.Effect<Fiber.RuntimeFiber<void>> =>
      Effect.suspend(() => {
        const claim: Claim = {
          id: execution.id,
          version: execution.version,
          owner: instanceId,
          webhook: execution.webhookUrl !== undefined
        }
        claims.set(execution.id, claim)
        const forget = Effect.sync(() => {
          if (claims.get(execution.id) === claim) claims.delete(execution.id)
        })
        const died = (exit: Exit.Exit<void>) =>
          Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)
            ? Effect.asVoid(
              Effect.forkIn(goOn(definition, claim, (options.deaths ?? 0) + 1, options.checked ?? false), scope)
            )
            : Effect.void
        const driven = drive(
          definition,
          execution,
          claim,
          options.startRecorded,
          options.checked ?? false,
          options.woken ?? false
        ).pipe(Effect.ensuring(forget), Effect.onExit(died))
        return FiberMap.run(fibers, execution.id, driven)
      })

    /**
     * After a fiber died of a store failure, with its execution still running as it held it (not even
     * its error could be written): once the store answers, the execution goes on from its checkpoint, as
     * a restarted instance would take it up, instead of staying running with no fiber until a restart.
     */
    const goOn = (definition: WorkflowDefinition, claim: Claim, deaths: number, checked: boolean) =>
      Effect.suspend(() => store.get(claim.id)).pipe(
        Effect.catchAllDefect(Effect.fail),
        Effect.delay(goOnDelay(deaths)),
        Effect.retry(STORE_RETRY),
        Effect.flatMap(Option.match({
          onNone: () => Effect.void,
          onSome: (row) =>
            draining || claims.has(row.id) || row.status !== "running" || row.owner !== claim.owner ||
              row.version !== claim.version
              ? Effect.void
              : Effect.zipRight(
                Effect.logInfo("workflow execution goes on after a store failure"),
                launch(definition, row, { startRecorded: false, deaths, checked })
              )
        })),
        Effect.annotateLogs({ workflowId: definition.id, executionId: claim.id })
      )

    return {
      record,
      /** `record` for a request's write (cancel, suspend): a store failure is retried; past the retries, a defect. */
      recordRetrying: (
        id: string,
        events: ReadonlyArray<S.WorkflowEvent>,
        write: Effect.Effect<Option.Option<number>>
      ) =>
        Effect.catchTag(
          recordRetrying(id, undefined, events, write),
          "StoreUnavailable",
          (error) => Effect.die(error.cause)
        ),
      open,
      /** Fails a held execution with `message` (its store failing past the retries is a defect). */
      fail: (claim: Claim, execution: Execution, message: string) =>
        Effect.catchTag(fail(claim, execution, message), "StoreUnavailable", (error) => Effect.die(error.cause)),
      launch,
      /** The execution's fiber, if one runs. */
      fiberOf: (id: string) => FiberMap.unsafeGet(fibers, id),
      /** Interrupts the execution's fiber and waits for its end. */
      stop: (id: string) => FiberMap.remove(fibers, id),
      /** The claims this instance's fibers hold. */
      claims: (): ReadonlyMap<string, Claim> => claims,
      /** Interrupts the execution's fiber if it still holds the claim at `version` (a newer one is left alone). */
      stopIfHeld: (id: string, version: number) =>
        Effect.suspend(() => (claims.get(id)?.version === version ? FiberMap.remove(fibers, id) : Effect.void)),
      isDraining,
      /** Runs a definition's hook for a transition committed here from outside the fiber (steps/Hooks.ts). */
      hook: <K extends HookName>(definition: WorkflowDefinition, name: K, event: HookEvents[K]) =>
        fireHook(definition, name, event, scope),
      drain
    }
  })

export type ExecutionDriver = Effect.Effect.Success<ReturnType<typeof makeExecutionDriver>>

import { Effect, type Fiber, Metric, Option, Runtime, Schedule } from "effect"
import type { BadRequest } from "../../core/errors.js"
import { Conflict, TooManyRequests } from "../../core/errors.js"
import { countExecution, workflowQueueDepth } from "../../observability/metrics/instruments.js"
import type { WorkflowDefinition } from "../definition/Workflow.js"
import { type ExecutionDriver, workflowEvent } from "../execution/ExecutionDriver.js"
import { type Execution, ExecutionStore } from "../execution/ExecutionStore.js"
import type { Launched } from "../execution/ExecutionWatch.js"
import { retryingRead } from "../execution/storeRetry.js"
import { concurrencyKeyOf, shownKey } from "./Concurrency.js"
import { makeConcurrencyStore } from "./ConcurrencyStore.js"

/** A started execution of a limited workflow: launched when it got a slot, else queued. */
export interface Gated extends Launched {
  readonly queued: boolean
}

/**
 * Concurrency limits (issue #33) around the execution driver. A limited workflow's execution is stored
 * `queued` and admitted at once when its key has a free slot (concurrency/ConcurrencyStore.ts). Every
 * drive fiber of a limited execution, when it ends (the execution ended, suspended, parked on a timer,
 * was cancelled, released or lost), admits the next ones of its key here; a sweep every `pollMs`
 * admits those of any key (on every instance: a slot freed by a dead instance, a notice lost). Admitted
 * executions are launched by the instance that admitted them.
 */
export const makeConcurrencyGate = (options: {
  readonly driver: ExecutionDriver
  readonly workflows: ReadonlyMap<string, WorkflowDefinition>
  readonly instanceId: string
  readonly pollMs: number
  readonly leaving: Effect.Effect<boolean>
  /** Executions one owner may have queued on one key (`workflows.maxQueuedPerKey`). */
  readonly maxQueued: number
}) =>
  Effect.gen(function*() {
    const { driver: raw, instanceId, workflows } = options
    const store = yield* ExecutionStore
    const slots = yield* makeConcurrencyStore
    const runtime = yield* Effect.runtime<never>()
    // The fiber a queued start's waiters watch: it ends only with the engine.
    const idle: Fiber.RuntimeFiber<void> = yield* Effect.forkScoped(Effect.never)

    const closed = Effect.map(options.leaving, (leaving) => leaving || raw.isDraining())

    /** Admits what fits of `key` and launches it here: the launched executions. */
    const admit = (definition: WorkflowDefinition, key: string): Effect.Effect<ReadonlyArray<Launched>> =>
      Effect.gen(function*() {
        const limit = definition.concurrency?.limit
        if (limit === undefined || (yield* closed)) return []
        return yield* Effect.uninterruptible(
          Effect.flatMap(slots.admit(key, definition.id, limit, instanceId), (admitted) =>
            Effect.forEach(admitted, (execution) =>
              Effect.map(launchWatched(definition, execution, launchOf(execution)), (fiber) => ({ execution, fiber }))))
        )
      }).pipe(
        Effect.tap((launched) =>
          Effect.forEach(launched, ({ execution }) =>
            Effect.logInfo("workflow admitted: it has a concurrency slot").pipe(
              Effect.annotateLogs({ workflowId: definition.id, executionId: execution.id })
            ), { discard: true })
        )
      )

    /** Admission after a limited execution's fiber ended: its slot may be free. */
    const afterEnd = (definition: WorkflowDefinition, key: string) =>
      Effect.catchAllCause(admit(definition, key), (cause) =>
        Effect.logWarning("admitting queued workflow executions failed; the next sweep retries", cause))

    /** How an admitted execution is launched, by where it was queued from. */
    const launchOf = (execution: Execution) => {
      const from = execution.queuedFrom ?? "start"
      const checked = from.endsWith("-checked")
      // A fresh start is stored with its opening events (a replay's too: its data is checked then); a
      // resumed one records its step-start; a woken one's is stored with its park.
      if (from.startsWith("resume")) {
        return { startRecorded: false, checked }
      }
      if (from.startsWith("wake")) {
        return { startRecorded: true, checked, woken: true }
      }
      return { startRecorded: true, checked: execution.replayOf !== undefined }
    }

    const launchWatched: ExecutionDriver["launch"] = (definition, execution, launchOptions) =>
      Effect.tap(raw.launch(definition, execution, launchOptions), (fiber) =>
        Effect.sync(() => {
          const key = execution.concurrencyKey
          if (key === undefined || definition.concurrency === undefined) {
            return
          }
          fiber.addObserver(() => {
            Runtime.runFork(runtime)(afterEnd(definition, key))
          })
        }))

    /**
     * A resumed or woken execution of a limited workflow, claimed running: launched when its key has
     * room for it, else queued again (its launch deferred to its admission); the fiber waiters watch.
     */
    const relaunch = (
      definition: WorkflowDefinition,
      execution: Execution,
      from: "resume" | "wake",
      launchOptions: Parameters<ExecutionDriver["launch"]>[2]
    ) =>
      Effect.gen(function*() {
        const key = execution.concurrencyKey
        const limit = definition.concurrency?.limit
        if (key === undefined || limit === undefined) {
          return yield* launchWatched(definition, execution, launchOptions)
        }
        // A store failing past its retries must not leave the claimed execution without a fiber: it runs
        // (its writes wait for the store), over the limit at worst.
        const queued = yield* slots.requeue(
          key,
          definition.id,
          limit,
          execution,
          launchOptions.checked === true ? `${from}-checked` : from
        ).pipe(
          Effect.catchAllDefect((defect) =>
            Effect.as(
              Effect.logWarning(
                "queueing a workflow execution again failed; it runs without waiting for a slot",
                defect
              ),
              false
            )
          )
        )
        if (!queued) {
          return yield* launchWatched(definition, execution, launchOptions)
        }
        yield* Effect.logInfo(`workflow queued again after its ${from}: its concurrency key is full`).pipe(
          Effect.annotateLogs({ workflowId: definition.id, executionId: execution.id })
        )
        return idle
      })

    /**
     * Launches; a woken or taken-over execution goes through its key's queue (`relaunch`). A process that
     * died between a wake's or a resume's claim and its `relaunch` left one running row too many: the
     * instance taking it over queues it again (recovered like a resumed one: its step-start is not stored).
     */
    const launch: ExecutionDriver["launch"] = (definition, execution, launchOptions) =>
      launchOptions.woken === true
        ? relaunch(definition, execution, "wake", launchOptions)
        : launchOptions.recovered === true
        ? relaunch(definition, execution, "resume", launchOptions)
        : launchWatched(definition, execution, launchOptions)

    /** The driver the engine and its services use: limited executions' fibers admit the next ones when they end. */
    const driver: ExecutionDriver = { ...raw, launch }

    /** Cancels a running or queued execution with `reason` (conditional, as a request's cancel). */
    const cancel = (id: string, reason: string) =>
      Effect.gen(function*() {
        const found = yield* retryingRead(store.get(id))
        if (Option.isNone(found) || found.value.status !== "running") {
          return false
        }
        const cancelled = workflowEvent(found.value, "workflow-cancelled", found.value.workflowName, "cancelled", {
          reason
        })
        const stored = yield* Effect.uninterruptible(Effect.tap(
          driver.recordRetrying(id, [cancelled], store.cancel(id, cancelled)),
          (seq) =>
            Option.isSome(seq) ? raw.stop(id) : Effect.void
        ))
        if (Option.isNone(stored)) {
          return false
        }
        yield* countExecution("cancelled")
        yield* Effect.logInfo(`workflow cancelled: ${reason}`).pipe(
          Effect.annotateLogs({ workflowId: found.value.workflowId, executionId: id })
        )
        return true
      })

    const busy = (definition: WorkflowDefinition, key: string) =>
      new Conflict({
        message:
          `Workflow ${definition.id} already runs ${definition.concurrency?.limit} execution(s) with the concurrency key "${
            shownKey(key)
          }", its limit (onBusy: reject)`
      })

    /**
     * The execution keyed when its workflow is limited (stored queued, unowned); 400 on a bad key. With
     * `onBusy: 'reject'`, 409 at once when the key is full (checked again once stored).
     */
    const keyed = (
      definition: WorkflowDefinition,
      execution: Execution
    ): Effect.Effect<Execution, BadRequest | Conflict> =>
      Effect.gen(function*() {
        if (definition.concurrency === undefined) {
          return execution
        }
        const key = execution.concurrencyKey ??
          (yield* concurrencyKeyOf(definition, execution.input, {
            userId: execution.userId,
            context: execution.context
          }))
        if (key === undefined) {
          return execution
        }
        if (
          definition.concurrency.onBusy === "reject" && (yield* slots.runningCount(key)) >= definition.concurrency.limit
        ) {
          return yield* busy(definition, key)
        }
        return { ...execution, concurrencyKey: key, queuedAt: execution.createdAt, owner: undefined }
      })

    /**
     * After a limited execution's row was stored queued: admitted at once when it fits; else, by
     * `onBusy`, left queued (enqueue), taken back with a 409 (reject: the row is deleted), or the older
     * running and queued ones of its key cancelled as superseded, then admitted (interrupt; a newer one
     * still running keeps it queued, and supersedes it in turn).
     */
    const started = (
      definition: WorkflowDefinition,
      execution: Execution,
      key: string
    ): Effect.Effect<Gated, Conflict> =>
      Effect.gen(function*() {
        const ours = (launched: ReadonlyArray<Launched>) =>
          launched.find((l) =>
            l.execution.id === execution.id
          )
        let mine = ours(yield* admit(definition, key))
        const onBusy = definition.concurrency?.onBusy ?? "enqueue"
        if (mine === undefined && onBusy === "reject") {
          if (yield* slots.withdraw(execution.id)) {
            yield* retryingRead(store.remove(execution.id))
            return yield* busy(definition, key)
          }
          // Admitted meanwhile by another instance: it runs.
        }
        if (mine === undefined && onBusy === "interrupt") {
          const reason = `superseded by ${execution.id}`
          const older = yield* slots.olderThan(key, execution.userId, execution.createdAt, execution.id)
          yield* Effect.forEach(older, ({ id }) => cancel(id, reason), { discard: true })
          mine = ours(yield* admit(definition, key))
        }
        if (mine !== undefined) return { ...mine, queued: false }
        // Admitted meanwhile by another start's admission, here or on another instance: it runs (its
        // waiters follow its events, fetched from the store when it runs elsewhere); or already
        // superseded by a newer start under `interrupt`: its waiters see it cancelled.
        const row = yield* retryingRead(store.get(execution.id))
        if (Option.isSome(row) && row.value.queuedAt === undefined) {
          return { execution: row.value, fiber: Option.getOrElse(raw.fiberOf(execution.id), () => idle), queued: false }
        }
        return { execution, fiber: idle, queued: true }
      })

    /**
     * A new execution's opening write: a limited workflow's is stored queued only while its owner has
     * fewer than `maxQueued` queued on its key, else 429 naming the setting. None when the id is taken.
     */
    const open = (execution: Execution, opening: Parameters<ExecutionDriver["open"]>[1]) =>
      Effect.gen(function*() {
        const key = execution.concurrencyKey
        if (key === undefined || execution.queuedAt === undefined) return yield* raw.open(execution, opening)
        const written = yield* raw.open(execution, opening, slots.openQueued(execution, opening, options.maxQueued))
        if (Option.isSome(written) || (yield* retryingRead(store.exists(execution.id)))) return written
        return yield* new TooManyRequests({
          message:
            `Workflow ${execution.workflowId} already has ${options.maxQueued} executions queued for the concurrency key "${
              shownKey(key)
            }" by this caller, the most workflows.maxQueuedPerKey allows`
        })
      })

    /** Admits the queued executions of every key (each instance, every `pollMs`); updates the queue depths. */
    let sweeps = 0
    const sweep = Effect.gen(function*() {
      // Every 30th sweep: the rows of idle keys go (concurrency/ConcurrencyStore.ts).
      if (sweeps++ % 30 === 29) yield* slots.forgetIdle
      for (const { key, workflowId } of yield* slots.queuedKeys) {
        const definition = workflows.get(workflowId)
        if (definition !== undefined) yield* afterEnd(definition, key)
      }
      const depths = new Map((yield* slots.depths).map((d) => [d.workflowId, d.queued]))
      for (const definition of workflows.values()) {
        if (definition.concurrency !== undefined) {
          yield* Metric.set(
            Metric.tagged(workflowQueueDepth, "workflow.id", definition.id),
            depths.get(definition.id) ?? 0
          )
        }
      }
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.logWarning("workflow concurrency sweep failed; the next one retries", cause)
      )
    )

    const limited = [...workflows.values()].some((definition) => definition.concurrency !== undefined)
    if (limited) {
      yield* sweep.pipe(Effect.repeat(Schedule.spaced(options.pollMs)), Effect.interruptible, Effect.forkScoped)
    }

    /** Launches a resumed execution, through its key's queue when full. */
    const resumed = (definition: WorkflowDefinition, execution: Execution, checked: boolean) =>
      relaunch(definition, execution, "resume", { startRecorded: false, checked })

    return { driver, keyed, open, started, admit, resumed }
  })

export type ConcurrencyGate = Effect.Effect.Success<ReturnType<typeof makeConcurrencyGate>>

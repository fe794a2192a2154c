import { Data, Effect, Option } from "effect"
import type { ErrorDetail } from "../../core/errorDetail.js"
import { countExecution } from "../../observability/metrics/instruments.js"
import type * as S from "../api/WorkflowSchemas.js"
import type { SuspendSignal } from "../definition/StepContext.js"
import type { Step, WorkflowDefinition } from "../definition/WorkflowDefinition.js"
import { endingHook, fireHook, hookBase } from "../steps/Hooks.js"
import { errorEvent, logEnding, suspensionAt } from "./ExecutionEndings.js"
import type { ExecutionHubs } from "./ExecutionHubs.js"
import type { ExecutionNotices } from "./ExecutionNotices.js"
import { type Claim, type Ending, type Execution, ExecutionStore } from "./ExecutionStore.js"
import { STORE_ERROR_RETRY, storedAre } from "./storeRetry.js"

/**
 * The driver's writes: each conditional store write published to the execution's listeners once it
 * applied, retried through store failures until its outcome is known, and the execution's failure with
 * what follows a committed ending or suspension (its log line, its hook).
 */

/** A write of a drive fiber that the store kept failing through STORE_ERROR_RETRY: no verdict on the execution. */
export class StoreUnavailable extends Data.TaggedError("StoreUnavailable")<{ readonly cause: unknown }> {}

export const makeExecutionWrites = (hubs: ExecutionHubs, notices: ExecutionNotices, recordContent: boolean) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore
    const scope = yield* Effect.scope

    /**
     * Runs a conditional store write and, when it applied, publishes its events (the last one numbered
     * `lastSeq`). Uninterruptible, so events that are stored are also published (waiters wait for the
     * settling one).
     */
    const record = <E>(
      id: string,
      events: ReadonlyArray<S.WorkflowEvent>,
      write: Effect.Effect<Option.Option<number>, E>
    ) =>
      Effect.uninterruptible(Effect.tap(write, (lastSeq) => {
        if (Option.isNone(lastSeq)) return Effect.void
        notices.changed(id)
        return Effect.forEach(
          events,
          (event, i) => hubs.publish(id, { seq: lastSeq.value - events.length + 1 + i, event }),
          { discard: true }
        )
      }))

    /**
     * After a write with events failed in the store, with its outcome unknown: the row read back. When
     * its last events are the write's, it committed and only its answer was lost; otherwise it runs
     * again (its own condition decides), unless it is a drive fiber's and its claim no longer holds
     * (none, as a refused write). Fails while the store fails.
     */
    const settle = (
      id: string,
      claim: Claim | undefined,
      events: ReadonlyArray<S.WorkflowEvent>,
      write: Effect.Effect<Option.Option<number>>
    ) =>
      Effect.gen(function*() {
        const holder = (yield* store.holders([id])).at(0)
        if (holder === undefined) return Option.none<number>()
        const tail = yield* store.events(id, Math.max(0, holder.lastSeq - events.length))
        if (storedAre(tail, events)) return Option.some(holder.lastSeq)
        const lost = claim !== undefined && !(holder.status === "running" && holder.version === claim.version &&
          (claim.owner === undefined || holder.owner === claim.owner))
        return lost ? Option.none<number>() : yield* write
      }).pipe(Effect.catchAllDefect(Effect.fail))

    /**
     * A conditional write with its events, recorded, where a store failure is retried (STORE_ERROR_RETRY)
     * until its outcome is known; past that, StoreUnavailable.
     */
    const recordRetrying = (
      id: string,
      claim: Claim | undefined,
      events: ReadonlyArray<S.WorkflowEvent>,
      write: Effect.Effect<Option.Option<number>>
    ) =>
      record(id, events, write).pipe(
        Effect.catchAllDefect((defect) =>
          Effect.logWarning("a workflow write failed in the store; retrying it", defect).pipe(
            Effect.zipRight(Effect.retry(record(id, events, settle(id, claim, events, write)), STORE_ERROR_RETRY)),
            Effect.mapError((cause) => new StoreUnavailable({ cause }))
          )
        )
      )

    /**
     * A held execution's write (conditional on its claim) with its events: a store failure is never the
     * execution's failure. Past the retries the fiber ends, leaving the execution running for `goOn`.
     */
    const checkpoint = (
      claim: Claim,
      events: ReadonlyArray<S.WorkflowEvent>,
      write: Effect.Effect<Option.Option<number>>
    ) => recordRetrying(claim.id, claim, events, write)

    /**
     * A fresh execution's opening write (its row and first events), retried as a checkpoint is. After a
     * failure the row is read back: this one's (its creation time and owner), it committed and only
     * its answer was lost; absent, the write runs again; another's, the id is taken (none). `write`
     * replaces the plain insert with a conditional one (a concurrency queue's bound).
     */
    const open = (
      execution: Execution,
      events: ReadonlyArray<S.WorkflowEvent>,
      write = store.create(execution, events)
    ) => {
      const settleOpening = Effect.gen(function*() {
        const row = yield* store.get(execution.id)
        if (Option.isNone(row)) return yield* write
        const ours = row.value.createdAt === execution.createdAt && row.value.owner === execution.owner
        return ours ? Option.some(row.value.lastSeq) : Option.none<number>()
      }).pipe(Effect.catchAllDefect(Effect.fail))
      return record(execution.id, events, write).pipe(
        Effect.catchAllDefect((defect) =>
          Effect.logWarning("a workflow's opening write failed in the store; retrying it", defect).pipe(
            Effect.zipRight(Effect.retry(record(execution.id, events, settleOpening), STORE_ERROR_RETRY)),
            Effect.orDie
          )
        )
      )
    }

    /**
     * Publishes what the store holds and the listeners here have not seen: a write that committed but
     * whose answer was lost (the connection or the commit thread died) published nothing, and its
     * settling event may be among them.
     */
    const publishStored = (id: string) =>
      Effect.suspend(() => {
        const seen = hubs.seenOf(id)
        return seen === undefined
          ? Effect.void
          : Effect.flatMap(store.events(id, seen), (events) => hubs.publishFetched(id, events))
      })

    const fail = (
      claim: Claim,
      execution: Execution,
      message: string,
      errorDetail?: ErrorDetail,
      definition?: WorkflowDefinition
    ) =>
      Effect.gen(function*() {
        const failed = errorEvent(execution, message, errorDetail)
        const ending: Ending = { status: "error", error: message, ...(errorDetail ? { errorDetail } : {}) }
        if (Option.isSome(yield* checkpoint(claim, [failed], store.finish(claim, ending, failed)))) {
          yield* ended(definition, execution, ending, undefined)
        }
      })

    /** After an ending is committed: its log line, then the workflow's onFinish or onError hook (steps/Hooks.ts). */
    const ended = (definition: WorkflowDefinition | undefined, execution: Execution, ending: Ending, result: unknown) =>
      Effect.zipRight(
        logEnding(ending, recordContent),
        definition === undefined ? Effect.void : endingHook(definition, execution, ending, result, scope)
      )

    /** Suspends a held execution at its step (the suspension committed with its event), then its log line and hook. */
    const suspend = (
      claim: Claim,
      definition: WorkflowDefinition,
      execution: Execution,
      step: Step,
      index: number,
      failure: SuspendSignal
    ) =>
      Effect.gen(function*() {
        const { suspended, suspension } = suspensionAt(execution, failure.path ?? step.id, index, failure)
        if (
          Option.isSome(
            yield* checkpoint(
              claim,
              [suspended],
              store.suspend({ ...claim, atStep: index }, suspension, suspended)
            )
          )
        ) {
          yield* countExecution("suspended")
          yield* Effect.logInfo(`workflow suspended at ${step.id}: ${failure.reason}`)
          yield* fireHook(definition, "onSuspend", {
            ...hookBase(execution),
            stepId: step.id,
            reason: failure.reason,
            data: failure.data
          }, scope)
        }
      })

    return { record, recordRetrying, checkpoint, open, publishStored, fail, ended, suspend }
  })

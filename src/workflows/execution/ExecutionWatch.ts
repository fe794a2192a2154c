import type { Fiber } from "effect"
import { Deferred, Effect, Exit, Option, Ref, Runtime, Stream } from "effect"
import { InternalError, type WorkflowFailed } from "../../core/errors.js"
import type * as S from "../api/WorkflowSchemas.js"
import { pagedEvents } from "./EventPages.js"
import { type ExecutionHubs, isSettling } from "./ExecutionHubs.js"
import { type Execution, ExecutionStore, type StoredEvent } from "./ExecutionStore.js"
import { type ExecutionUpdate, resultEntry, resultOf, settledBy } from "./ExecutionViews.js"
import { liveEvents } from "./LiveEvents.js"
import { retryingRead } from "./storeRetry.js"

/** An execution whose fiber was just started or woken, as that fiber holds it. */
export interface Launched {
  readonly execution: Execution
  readonly fiber: Fiber.RuntimeFiber<void>
}

/**
 * Waiting for executions (execute, resume) and following them (the SSE streams): what requests do
 * while an execution runs. The store is the truth; live events only tell that something was stored.
 */
export const makeExecutionWatch = (hubs: ExecutionHubs) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore
    // Reads a request makes while it waits: a store error (a connection reset) is tried again.
    const reload = (id: string) => Effect.map(retryingRead(store.get(id)), Option.getOrThrow)

    const paged = (id: string, from: number, to?: number) => pagedEvents(store, id, from, to)

    const diedWithoutSettling = (id: string) =>
      Effect.zipRight(
        Effect.logError("workflow execution ended without settling").pipe(Effect.annotateLogs({ executionId: id })),
        InternalError.generic
      )

    /**
     * Registers for the execution's next settling event (numbered after `afterSeq`), runs `action`
     * (which starts or wakes its fiber) and answers with the settled execution's result. Registering
     * first means a settle cannot slip past; a fiber that dies without settling is a 500, never a
     * hung request.
     */
    const settleAfter = <E>(
      id: string,
      afterSeq: number,
      action: Effect.Effect<Launched, E>
    ): Effect.Effect<S.ExecutionResult, E | InternalError | WorkflowFailed> =>
      Effect.scoped(Effect.gen(function*() {
        // None: the fiber ended abnormally with the execution unsettled (see diedUnsettled).
        const settled = yield* Deferred.make<Option.Option<StoredEvent>>()
        yield* hubs.nextSettling(id, afterSeq, settled)
        const launched = yield* action
        yield* whenDiedUnsettled(id, launched, settled)
        const outcome = yield* Deferred.await(settled)
        if (Option.isNone(outcome)) return yield* diedWithoutSettling(id)
        return yield* resultOf(settledBy(launched.execution, outcome.value))
      }))

    /**
     * diedUnsettled for a waiter, without a fiber of its own while the execution runs (the common case
     * costs an observer, not two forked fibers and a race): the check runs only once the fiber failed.
     */
    const whenDiedUnsettled = (
      id: string,
      launched: Launched,
      settled: Deferred.Deferred<Option.Option<StoredEvent>>
    ) =>
      Effect.gen(function*() {
        const runtime = yield* Effect.runtime<never>()
        const check = Effect.flatMap(
          reload(id),
          (after) =>
            after.status === "running" && after.version === launched.execution.version
              ? Deferred.succeed(settled, Option.none())
              : Effect.void
        )
        const observer = (exit: Exit.Exit<void>) => {
          if (Exit.isFailure(exit)) Runtime.runFork(runtime)(check)
        }
        launched.fiber.addObserver(observer)
        yield* Effect.addFinalizer(() => Effect.sync(() => launched.fiber.removeObserver(observer)))
      })

    /**
     * The events of a running execution after `afterSeq` until it settles, then its result. `known` is
     * the row as read before: live events are followed from before `start` runs (which may start the
     * fiber), so with the stored ones read after, none is lost or given twice. A client's `afterSeq`
     * past the last stored event counts from that event, or the settling one would be filtered out.
     */
    const follow = <E>(
      known: Execution,
      afterSeq: number,
      start: Effect.Effect<Option.Option<Fiber.RuntimeFiber<void>>, E>
    ): Stream.Stream<ExecutionUpdate, E> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const id = known.id
        const events = yield* hubs.subscribe(id, known.lastSeq)
        const fiber = yield* start
        const after = Math.min(afterSeq, known.lastSeq)
        // Those stored since the row was read (few) are read now; the older ones as the client takes them.
        const recent = yield* retryingRead(store.events(id, known.lastSeq))
        const lastStored = recent.at(-1)?.seq ?? known.lastSeq
        const settledSince = recent.some((entry) => isSettling(entry.event))
        const live = !settledSince ? yield* liveEvents(store, known, events, lastStored, fiber) : Stream.empty
        return Stream.concat(paged(id, after, known.lastSeq), Stream.fromIterable(recent)).pipe(
          Stream.concat(live),
          Stream.concat(Stream.fromEffect(Effect.map(reload(id), resultEntry)))
        )
      }))

    /**
     * The stored events after `afterSeq` and the result of an execution that is not running (`known`,
     * read before): nothing to follow, so read page by page as the client takes them.
     */
    const replay = (known: Execution, afterSeq: number): Effect.Effect<Stream.Stream<ExecutionUpdate>> =>
      Effect.map(Ref.make(known.lastSeq), (lastRead) =>
        Stream.concat(
          paged(known.id, afterSeq).pipe(Stream.tap((entry) => Ref.set(lastRead, entry.seq))),
          Stream.fromEffect(Effect.gen(function*() {
            // Resumed since it was read: the result must come from the row as it is now.
            const settled = (yield* Ref.get(lastRead)) > known.lastSeq ? yield* reload(known.id) : known
            return resultEntry(settled)
          }))
        ))

    return { reload, settleAfter, follow, replay }
  })

/** The execution watch: what follows, replays and waits for executions through their event hubs. */
export type Watch = Effect.Effect.Success<ReturnType<typeof makeExecutionWatch>>

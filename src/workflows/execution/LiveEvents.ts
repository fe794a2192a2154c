import { Chunk, Effect, Exit, type Fiber, Option, Queue, Runtime, type Scope, Stream } from "effect"
import { isSettling } from "./ExecutionHubs.js"
import type { Execution, ExecutionStore, StoredEvent } from "./ExecutionStore.js"
import { retryingRead } from "./storeRetry.js"

/**
 * A running execution's live events from `lastSeq` until its settling one, in order and each once, as
 * one pull (issue #42: an idle follower holds its subscription and this state, not a pipeline of
 * stages and a forked watcher). One seen already is dropped; one past a gap (events arrive from this
 * instance's fibers and from the store, written by others; a follower that reads slowly loses the
 * oldest of its buffer) brings the missing ones from the store first, a page at a time. The events end
 * early when `fiber` ends abnormally with the execution still running at `known.version`: nobody will
 * publish its settling event (a fiber that returns has settled it or lost it to a cancel or suspend,
 * which publish their own).
 */
export const liveEvents = (
  store: ExecutionStore["Type"],
  known: Execution,
  events: Queue.Dequeue<StoredEvent>,
  lastSeq: number,
  fiber: Option.Option<Fiber.RuntimeFiber<void>>
): Effect.Effect<Stream.Stream<StoredEvent>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const id = known.id
    let last = lastSeq
    let ended = false
    let died = false
    // A page read to fill a gap, given one at a time, then the live event that showed the gap.
    let backlog: Array<StoredEvent> = []
    let gap: StoredEvent | undefined

    if (Option.isSome(fiber)) {
      const runtime = yield* Effect.runtime<never>()
      const check = Effect.flatMap(retryingRead(store.get(id)), (after) =>
        Option.isSome(after) && after.value.status === "running" && after.value.version === known.version
          ? Effect.andThen(Effect.sync(() => (died = true)), Queue.shutdown(events))
          : Effect.void)
      const observer = (exit: Exit.Exit<void>) => {
        if (Exit.isFailure(exit)) {
          Runtime.runFork(runtime)(check)
        }
      }
      fiber.value.addObserver(observer)
      yield* Effect.addFinalizer(() =>
        Effect.sync(() =>
          fiber.value.removeObserver(observer)
        )
      )
    }

    const give = (entry: StoredEvent) => {
      last = entry.seq
      if (isSettling(entry.event)) ended = true
      return Effect.succeed(Chunk.of(entry))
    }
    const endOfEvents = Effect.fail(Option.none<never>())

    const pull: Effect.Effect<Chunk.Chunk<StoredEvent>, Option.Option<never>> = Effect.suspend(() => {
      if (ended) return endOfEvents
      const stored = backlog.shift()
      if (stored !== undefined) return give(stored)
      if (gap !== undefined) {
        const next = gap
        if (last >= next.seq - 1) {
          gap = undefined
          return give(next)
        }
        return Effect.flatMap(retryingRead(store.eventPage(id, last, next.seq - 1)), (page) => {
          if (page.length === 0) gap = undefined
          backlog = page.length === 0 ? [next] : [...page]
          return pull
        })
      }
      return Queue.take(events).pipe(
        // The subscription is shut down when the fiber died unsettled (see above).
        Effect.catchAllCause((cause) => (died ? endOfEvents : Effect.failCause(cause))),
        Effect.flatMap((entry) => {
          if (entry.seq <= last) return pull
          if (entry.seq === last + 1) return give(entry)
          gap = entry
          return pull
        })
      )
    })
    return Stream.repeatEffectChunkOption(pull)
  })

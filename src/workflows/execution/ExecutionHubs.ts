import { Deferred, Effect, Option, PubSub, type Queue, type Scope } from "effect"
import type { WorkflowEvent } from "../api/WorkflowSchemas.js"
import type { StoredEvent } from "./ExecutionStore.js"

/** The events after which an execution runs no further without an outside action. */
const SETTLING: ReadonlySet<WorkflowEvent["type"]> = new Set([
  "workflow-suspended",
  "workflow-complete",
  "workflow-error",
  "workflow-cancelled"
])

export const isSettling = (event: WorkflowEvent) => SETTLING.has(event.type)

/**
 * Live events of executions, for the requests that wait for or follow one. Listeners of an execution
 * exist only while someone listens: the first one creates them, the last one to leave removes them,
 * and publishing to an execution nobody listens to does nothing. Nothing is kept per execution
 * otherwise, so nothing outlives its listeners (a suspended execution may wait for days).
 *
 * Two kinds of listener: a follower gets every event (an SSE stream, through a PubSub made on its
 * first follower); a waiter gets only the next settling event (execute and resume, through a Deferred).
 */
export interface ExecutionHubs {
  /**
   * The execution's events published from now on, until the scope closes; `knownSeq`: the number of
   * its last event the caller has read (events stored elsewhere are fetched from there on).
   */
  readonly subscribe: (id: string, knownSeq: number) => Effect.Effect<Queue.Dequeue<StoredEvent>, never, Scope.Scope>
  /**
   * Registers now for the first settling event numbered after `afterSeq` (an older one may still be on
   * its way from the fiber that stored it): it completes `settled`, until the scope closes.
   */
  readonly nextSettling: (
    id: string,
    afterSeq: number,
    settled: Deferred.Deferred<Option.Option<StoredEvent>>
  ) => Effect.Effect<void, never, Scope.Scope>
  /** An event this instance stored. */
  readonly publish: (id: string, entry: StoredEvent) => Effect.Effect<void>
  /** Events read from the store (another instance stored them): those not published yet are. */
  readonly publishFetched: (id: string, entries: ReadonlyArray<StoredEvent>) => Effect.Effect<void>
  /** The executions someone here listens to, each with the number of the last event published or known. */
  readonly watched: () => ReadonlyMap<string, number>
  /** That number for one execution; none when nobody here listens to it. */
  readonly seenOf: (id: string) => number | undefined
  /** How many executions have listeners (for tests and diagnostics). */
  readonly size: Effect.Effect<number>
}

interface Listeners {
  pubsub: PubSub.PubSub<StoredEvent> | undefined
  followers: number
  /** The number of the last event published or known to a listener: fetching resumes after it. */
  seen: number
  /** Each waiter with the number its settling event must be above. */
  readonly waiters: Map<Deferred.Deferred<Option.Option<StoredEvent>>, number>
}

/**
 * Events a follower may fall behind by: one that stops reading (a client that does not read its SSE
 * stream) loses its oldest, and the stream fills the gap from the store when it reads again
 * (ExecutionWatch), so memory stays bounded and no event is lost.
 */
export const FOLLOWER_BUFFER = 256

export const makeExecutionHubs = Effect.sync((): ExecutionHubs => {
  const byId = new Map<string, Listeners>()

  // Joining and leaving run synchronously, so they never interleave. A PubSub is not shut down when
  // it is dropped: a publisher that looked it up just before would be interrupted by the shutdown.
  const listenersOf = (id: string, knownSeq: number) => {
    let listeners = byId.get(id)
    if (listeners === undefined) {
      listeners = { pubsub: undefined, followers: 0, seen: knownSeq, waiters: new Map() }
      byId.set(id, listeners)
    }
    listeners.seen = Math.max(listeners.seen, knownSeq)
    return listeners
  }
  const dropIfUnused = (id: string, listeners: Listeners) => {
    if (listeners.followers === 0 && listeners.waiters.size === 0 && byId.get(id) === listeners) byId.delete(id)
  }

  const follow = (id: string, knownSeq: number) =>
    Effect.acquireRelease(
      Effect.map(PubSub.sliding<StoredEvent>(FOLLOWER_BUFFER), (fresh) => {
        const listeners = listenersOf(id, knownSeq)
        listeners.pubsub ??= fresh
        listeners.followers++
        return listeners
      }),
      (listeners) =>
        Effect.sync(() => {
          listeners.followers--
          if (listeners.followers === 0) listeners.pubsub = undefined
          dropIfUnused(id, listeners)
        })
    )

  const publish = (id: string, entry: StoredEvent) =>
    Effect.suspend(() => {
      const listeners = byId.get(id)
      if (listeners === undefined) return Effect.void
      listeners.seen = Math.max(listeners.seen, entry.seq)
      if (isSettling(entry.event)) {
        for (const [waiter, afterSeq] of listeners.waiters) {
          if (entry.seq > afterSeq) Deferred.unsafeDone(waiter, Effect.succeed(Option.some(entry)))
        }
      }
      return listeners.pubsub === undefined ? Effect.void : PubSub.publish(listeners.pubsub, entry)
    })

  return {
    subscribe: (id, knownSeq) =>
      Effect.flatMap(follow(id, knownSeq), (listeners) => PubSub.subscribe(listeners.pubsub!)),
    nextSettling: (id, afterSeq, settled) =>
      Effect.asVoid(Effect.acquireRelease(
        Effect.sync(() => {
          const listeners = listenersOf(id, afterSeq)
          listeners.waiters.set(settled, afterSeq)
          return listeners
        }),
        (listeners) =>
          Effect.sync(() => {
            listeners.waiters.delete(settled)
            dropIfUnused(id, listeners)
          })
      )),
    publish,
    publishFetched: (id, entries) =>
      Effect.forEach(
        entries,
        (entry) => (entry.seq > (byId.get(id)?.seen ?? Infinity) ? publish(id, entry) : Effect.void),
        {
          discard: true
        }
      ),
    watched: () => new Map(Array.from(byId, ([id, listeners]) => [id, listeners.seen])),
    seenOf: (id) => byId.get(id)?.seen,
    size: Effect.sync(() => byId.size)
  }
})

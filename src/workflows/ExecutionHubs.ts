import { Effect, PubSub, type Queue, type Scope } from "effect"
import type { StoredEvent } from "./ExecutionStore.js"

/**
 * Live events of executions, for the requests that follow one. A hub exists only while someone
 * listens: the first subscriber creates it, the last one to leave removes it, and publishing to an
 * execution nobody follows does nothing. Nothing is kept per execution otherwise, so hubs cannot
 * outlive their listeners (a suspended execution may wait for days).
 */
export interface ExecutionHubs {
  /** The execution's events published from now on, until the scope closes. */
  readonly subscribe: (id: string) => Effect.Effect<Queue.Dequeue<StoredEvent>, never, Scope.Scope>
  readonly publish: (id: string, entry: StoredEvent) => Effect.Effect<void>
  /** How many executions have listeners (for tests and diagnostics). */
  readonly size: Effect.Effect<number>
}

interface Hub {
  readonly pubsub: PubSub.PubSub<StoredEvent>
  listeners: number
}

export const makeExecutionHubs = Effect.sync((): ExecutionHubs => {
  const hubs = new Map<string, Hub>()

  // Both run synchronously, so joining and leaving never interleave. The PubSub is not shut down when
  // its hub is dropped: a publisher that looked it up just before would be interrupted by the shutdown.
  const join = (id: string, fresh: PubSub.PubSub<StoredEvent>) =>
    Effect.sync(() => {
      const hub = hubs.get(id) ?? { pubsub: fresh, listeners: 0 }
      hubs.set(id, hub)
      hub.listeners++
      return hub
    })
  const leave = (id: string, hub: Hub) =>
    Effect.sync(() => {
      hub.listeners--
      if (hub.listeners === 0 && hubs.get(id) === hub) hubs.delete(id)
    })

  return {
    subscribe: (id) =>
      PubSub.unbounded<StoredEvent>().pipe(
        Effect.flatMap((fresh) => Effect.acquireRelease(join(id, fresh), (hub) => leave(id, hub))),
        Effect.flatMap((hub) => PubSub.subscribe(hub.pubsub))
      ),
    publish: (id, entry) =>
      Effect.suspend(() => {
        const hub = hubs.get(id)
        return hub === undefined ? Effect.void : PubSub.publish(hub.pubsub, entry)
      }),
    size: Effect.sync(() => hubs.size)
  }
})

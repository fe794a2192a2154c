import { Effect, PubSub, type Queue, type Scope } from "effect"

export interface LiveFeed<A> {
  /** Publishes from synchronous code (a logger, a span processor); never blocks, never fails. */
  readonly publish: (item: A) => void
  /** A subscription for as long as the scope lasts; a reader that falls `capacity` behind loses its oldest items. */
  readonly subscribe: Effect.Effect<Queue.Dequeue<A>, never, Scope.Scope>
  /** How many subscriptions are open. */
  readonly subscribers: Effect.Effect<number>
  /** Whether anyone is subscribed (to skip building items nobody reads). */
  readonly isWatched: () => boolean
}

/**
 * A live feed with a bounded, sliding window per subscriber: one slow reader loses its own oldest
 * items and never holds back the others.
 */
export const makeLiveFeed = <A>(capacity: number): Effect.Effect<LiveFeed<A>> =>
  Effect.map(PubSub.sliding<A>(capacity), (live) => {
    let open = 0
    return {
      // `unsafeOffer` bypasses the sliding strategy (when the slowest subscriber is full it drops the new
      // item for everyone), so a full window goes through `publish`, which slides (synchronously).
      publish: (item) => {
        if (!live.unsafeOffer(item)) Effect.runSyncExit(PubSub.publish(live, item))
      },
      subscribe: Effect.acquireRelease(
        Effect.tap(PubSub.subscribe(live), () => Effect.sync(() => open++)),
        () => Effect.sync(() => open--)
      ),
      subscribers: Effect.sync(() => open),
      isWatched: () => open > 0
    }
  })

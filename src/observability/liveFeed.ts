import { Effect, PubSub } from "effect"

/** Subscriptions to `live` that know how many are open (each ends with its scope). */
export const countedSubscription = <A>(live: PubSub.PubSub<A>) => {
  let open = 0
  return {
    subscribe: Effect.acquireRelease(
      Effect.tap(PubSub.subscribe(live), () => Effect.sync(() => open++)),
      () => Effect.sync(() => open--)
    ),
    subscribers: Effect.sync(() => open)
  }
}

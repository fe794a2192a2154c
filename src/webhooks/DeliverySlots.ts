import { Effect } from "effect"

/** What a claim may take: `limit` deliveries in all, of each owner `perOwner` less what it `held` already. */
export interface OwnerShare {
  readonly limit: number
  readonly perOwner: number
  readonly held: ReadonlyMap<string, number>
}

/**
 * An instance's delivery slots (issue #42, settled 9): at most `total` attempts in flight, at most
 * `perOwner` of one owner, so that one owner's receiver that never answers holds `perOwner` of them
 * and not all. Claims take their share one at a time; an attempt gives its slot back when it ends.
 */
export const makeDeliverySlots = (total: number, perOwner: number) =>
  Effect.gen(function*() {
    const lock = yield* Effect.makeSemaphore(1)
    const held = new Map<string, number>()
    let inFlight = 0

    /** Runs `claim` with the share that is free now, and counts what it took as held. */
    const take = <A extends { readonly owner: string }, E, R>(
      claim: (share: OwnerShare) => Effect.Effect<ReadonlyArray<A>, E, R>
    ) =>
      lock.withPermits(1)(Effect.gen(function*() {
        if (inFlight >= total) return []
        const taken = yield* claim({ limit: total - inFlight, perOwner, held })
        for (const item of taken) held.set(item.owner, (held.get(item.owner) ?? 0) + 1)
        inFlight += taken.length
        return taken
      }))

    const release = (owner: string) =>
      Effect.sync(() => {
        const left = (held.get(owner) ?? 0) - 1
        if (left > 0) held.set(owner, left)
        else held.delete(owner)
        inFlight--
      })

    return { take, release, held: (owner: string) => held.get(owner) ?? 0, inFlight: () => inFlight }
  })
export type DeliverySlots = Effect.Effect.Success<ReturnType<typeof makeDeliverySlots>>

import { Context, Effect, Layer, Ref } from "effect"

/**
 * Whether this instance is on its way out. Once draining it answers `GET /ready` with 503, so a load
 * balancer stops sending it work, and (in the workflow engine) stops claiming executions.
 */
export class Lifecycle extends Context.Tag("Lifecycle")<Lifecycle, {
  readonly draining: Effect.Effect<boolean>
  /** Idempotent; there is no way back. */
  readonly beginDraining: Effect.Effect<void>
}>() {}

/** Draining begins at the latest when the service's scope starts closing (SIGTERM, SIGINT, Layer scope close). */
export const LifecycleLive = Layer.scoped(
  Lifecycle,
  Effect.gen(function*() {
    const draining = yield* Ref.make(false)
    const beginDraining = Ref.set(draining, true)
    yield* Effect.addFinalizer(() => beginDraining)
    return Lifecycle.of({ draining: Ref.get(draining), beginDraining })
  })
)

import { Context, Deferred, Effect, FiberId, Tracer } from "effect"

/**
 * The context user code runs with (issue #30): what the app's layer was given (the services of the
 * user's own: `R` of the app), and the service's own AgentRegistry, WorkflowEngine and ToolRunner once
 * they are built, so that user code may call them without a layer cycle. It is provided to each
 * Effect user code returns, in the fiber that runs it: the step's or tool's span stays its parent, its
 * log annotations stay, and cancel, suspend, timeout and shutdown interrupt it.
 */
export class UserContext extends Context.Tag("UserContext")<UserContext, {
  readonly provide: <A, E>(effect: Effect.Effect<A, E, unknown>) => Effect.Effect<A, E>
  /** Called once the service's own services are built. */
  readonly ownServicesBuilt: (own: Context.Context<never>) => void
}>() {}

// A Context is contravariant in what it holds: `Context<never>` is any context, its services unknown here.
export const makeUserContext = (given: Context.Context<never>): UserContext["Type"] => {
  // The span current when the layer was built must not become the parent of every later call's spans.
  const base = Context.omit(Tracer.ParentSpan)(given)
  const ready = Deferred.unsafeMake<void>(FiberId.none)
  let whole: Context.Context<never> | undefined
  // The bound definitions' types say what this context holds (the app's `R`, checked where the layer is built).
  const withWhole = <A, E>(effect: Effect.Effect<A, E, unknown>) =>
    Effect.provide(effect as Effect.Effect<A, E>, whole!)
  const provide = <A, E>(effect: Effect.Effect<A, E, unknown>): Effect.Effect<A, E> =>
    whole !== undefined
      ? withWhole(effect)
      // Only before the service is up (an execution recovered while the layers build).
      : Effect.zipRight(Deferred.await(ready), Effect.suspend(() => withWhole(effect)))
  return {
    provide,
    ownServicesBuilt: (own) => {
      whole = Context.merge(base, own)
      Deferred.unsafeDone(ready, Effect.void)
    }
  }
}

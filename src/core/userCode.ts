import { Cause, Effect, Exit, Predicate } from "effect"

/**
 * What user code (a tool's `execute`, a workflow step's function, an agent's dynamic part) may return.
 * At run time its Effect's requirements are already provided (see `UserContext`); the types that
 * carry them are on the definitions (`Tool<R>`, `AgentDefinition<R>`, `WorkflowDefinition<I, O, R>`).
 */
export type UserResult<A> = A | PromiseLike<A> | Effect.Effect<A, unknown, unknown>

/** The value user code produces: an Effect's success, a Promise's value, or the value itself. */
export type ResultValue<Ret> = Ret extends Effect.Effect<infer A, infer _E, infer _R> ? A
  : Ret extends PromiseLike<infer A> ? A
  : Ret

/** How user code fails: an Effect's `E`, `unknown` for a Promise's rejection, `never` for a plain value. */
export type ResultError<Ret> = Ret extends Effect.Effect<infer _A, infer E, infer _R> ? E
  : Ret extends PromiseLike<unknown> ? unknown
  : never

/** What user code requires: an Effect's `R`, `never` otherwise (and for `any`: code typed `any` opted out). */
export type ResultContext<Ret> = 0 extends 1 & Ret ? never
  : Ret extends Effect.Effect<infer _A, infer _E, infer R> ? R
  : never

/** What user code returned, as an Effect: an Effect runs as is, a Promise fails with its rejection. */
export const fromUserResult = <A>(out: UserResult<A>): Effect.Effect<A, unknown> =>
  Effect.isEffect(out)
    ? out as Effect.Effect<A, unknown>
    : Predicate.isPromiseLike(out)
    ? Effect.tryPromise({ try: () => Promise.resolve(out), catch: (error) => error })
    : Effect.succeed(out)

/** An abort signal made only when the code reads it (most never do). */
export class LazySignal {
  private controller: AbortController | undefined
  get signal(): AbortSignal {
    this.controller ??= new AbortController()
    return this.controller.signal
  }
  abort(): void {
    this.controller?.abort()
  }
}

/**
 * Calls user code and runs what it returned, a throw being a defect. Anything but success (failure,
 * defect, interruption) aborts the signal and goes through `onFailure`; a plain value costs no more
 * than a function call.
 */
export const runUserCode = <A, E>(
  code: (signal: LazySignal) => UserResult<A>,
  onFailure: (cause: Cause.Cause<unknown>) => Effect.Effect<never, E>
): Effect.Effect<A, E> =>
  Effect.suspend(() => {
    const signal = new LazySignal()
    let out: UserResult<A>
    try {
      out = code(signal)
    } catch (error) {
      signal.abort()
      return onFailure(Cause.die(error))
    }
    if (!Effect.isEffect(out) && !Predicate.isPromiseLike(out)) return Effect.succeed(out)
    return fromUserResult(out).pipe(
      Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => signal.abort()))),
      Effect.catchAllCause(onFailure)
    )
  })

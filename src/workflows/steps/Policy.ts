import { Data, Duration, Effect, type Schedule } from "effect"

export type { RuntimeHooks, WorkflowHooks } from "./Hooks.js"

/**
 * Step policies (issue #31): `retry` and `timeout` on the steps that run user code. The retry loop
 * itself, which commits each attempt, is in PolicyRun.ts; their definition-time checks in policyChecks.ts.
 */

/** A step's run that took longer than its `timeout`: its signal was aborted and its fiber interrupted. */
export class StepTimeout extends Data.TaggedError("StepTimeout")<{
  readonly stepId: string
  readonly timeoutMs: number
  readonly message: string
}> {}

/**
 * When a failed step runs again. `schedule` is stepped with each failure (the step's `E`, or a
 * `StepTimeout`); its delays are the back-offs, its end is the end of the retries. `while` decides per
 * failure (a defect, a throw or `Effect.die`, is retried only without `while`: it is not an `E`).
 */
export interface StepRetry<E> {
  readonly schedule: Schedule.Schedule<unknown, E | StepTimeout>
  readonly while?: ((error: E | StepTimeout) => boolean) | undefined
}

/** The policies a step that runs user code takes. */
export interface StepPolicy<E> {
  readonly retry?: StepRetry<E> | undefined
  /** How long one attempt may run; past it the attempt fails with `StepTimeout`. */
  readonly timeout?: Duration.DurationInput | undefined
}

/** What an andAgent's call may fail with: its tagged errors (NotFound, ValidationError, ExecutionFailed, AgentOutputInvalid). */
export type AgentCallError = { readonly _tag: string; readonly message: string }

/** The most attempts a step makes, whatever its schedule says (each failed one is committed). */
export const MAX_ATTEMPTS = 100
/** The longest back-off a retry waits (in memory; the due time is committed). */
export const MAX_RETRY_DELAY = Duration.days(1)
/** The longest `timeout` a step may have. */
export const MAX_TIMEOUT = Duration.days(7)

/** The timeout of a step as the runtime holds it, if any. */
export const timeoutOf = (
  step: { readonly timeout?: Duration.DurationInput | undefined }
): Duration.Duration | undefined => {
  const timeout = step.timeout
  return timeout === undefined ? undefined : Duration.decode(timeout)
}

/** The retry of a step (top-level or inner) as the runtime holds it, if any. */
export const retryOf = (step: StepPolicy<any>): StepRetry<unknown> | undefined => step.retry

/**
 * One attempt of `step`, bounded by its timeout: past it, the attempt's fiber is interrupted (its
 * signal aborts: runUserCode), whatever it answers later is dropped, and it fails with what `fail`
 * makes of a StepTimeout.
 */
export const timed = <A, E>(
  step: { readonly id: string; readonly timeout?: Duration.DurationInput | undefined },
  run: Effect.Effect<A, E>,
  fail: (timeout: StepTimeout) => E
): Effect.Effect<A, E> => {
  const timeout = timeoutOf(step)
  if (timeout === undefined) return run
  const timeoutMs = Duration.toMillis(timeout)
  return Effect.timeoutFail(run, {
    duration: timeout,
    onTimeout: () =>
      fail(new StepTimeout({ stepId: step.id, timeoutMs, message: `timed out after ${Duration.format(timeout)}` }))
  })
}

import { Cause, Data, Duration, Effect, type Scope } from "effect"
import type { ErrorDetail } from "../../core/errorDetail.js"
import { runUserCode, type UserResult } from "../../core/userCode.js"
import { errorDetailOf, failureMessage } from "../../observability/errorDetail.js"
import { capString } from "../../observability/Redaction.js"

/**
 * Workflow hooks (issue #31): user functions told of an execution's transitions once they are
 * committed, in the process that committed them, at most once (nothing runs them again after a crash:
 * for guaranteed delivery, the webhooks of issue 33), each bounded by HOOK_TIMEOUT and in its own span.
 * A hook that fails or is slow is logged; it never fails, delays or changes the execution.
 */

interface HookBase {
  readonly executionId: string
  readonly workflowId: string
  /** The user the execution belongs to, if any. */
  readonly userId: string | undefined
}

/** onStart: the execution and its first events are stored. */
export interface OnStartEvent<I> extends HookBase {
  readonly input: I
}

/** onSuspend: a step suspended it (`suspend(reason, data)`), and that is stored. */
export interface OnSuspendEvent extends HookBase {
  readonly stepId: string
  readonly reason: string
  readonly data: unknown
}

/** onFinish: it completed with `result`, stored. */
export interface OnFinishEvent<O> extends HookBase {
  readonly result: O
}

/** onError: it failed with `error` (and the failing code's tag and fields, when there was one), stored. */
export interface OnErrorEvent extends HookBase {
  readonly error: string
  readonly errorDetail: ErrorDetail | undefined
}

/**
 * The hooks of `workflow({...})`: each returns an Effect (its `R` joins the workflow's), a Promise or
 * a value, as steps do.
 */
export interface WorkflowHooks<I, O, HS, HP, HF, HE> {
  readonly onStart?: ((event: OnStartEvent<I>) => HS) | undefined
  readonly onSuspend?: ((event: OnSuspendEvent) => HP) | undefined
  readonly onFinish?: ((event: OnFinishEvent<O>) => HF) | undefined
  readonly onError?: ((event: OnErrorEvent) => HE) | undefined
}

/** Each hook's event, as the runtime makes it. */
export interface HookEvents {
  readonly onStart: OnStartEvent<unknown>
  readonly onSuspend: OnSuspendEvent
  readonly onFinish: OnFinishEvent<unknown>
  readonly onError: OnErrorEvent
}

export type HookName = keyof HookEvents

/** A hook as the runtime holds it. */
export type HookFn = (event: any) => UserResult<unknown>

/** The hooks of a definition as the runtime holds them. */
export interface RuntimeHooks {
  readonly onStart?: HookFn | undefined
  readonly onSuspend?: HookFn | undefined
  readonly onFinish?: HookFn | undefined
  readonly onError?: HookFn | undefined
}

export const HOOK_TIMEOUT = Duration.seconds(5)

/**
 * Runs `definition`'s hook `name` with `event` in the background (in `scope`), if it has one: the
 * caller has committed the transition, and goes on at once.
 */
export const fireHook = <K extends HookName>(
  definition: RuntimeHooks & { readonly id: string },
  name: K,
  event: HookEvents[K],
  scope: Scope.Scope
): Effect.Effect<void> => {
  const hook = definition[name]
  if (typeof hook !== "function") return Effect.void
  const run = runUserCode(() => hook(event), Effect.failCause).pipe(
    Effect.timeoutFail({
      duration: HOOK_TIMEOUT,
      onTimeout: () => new HookTimedOut({ message: `did not finish within ${Duration.format(HOOK_TIMEOUT)}` })
    }),
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.void
      const error = Cause.squash(cause)
      const detail = errorDetailOf(error)
      const message = capString(failureMessage(error, detail), 512)
      return Effect.logWarning(
        `workflow hook ${name} failed (${detail?._tag ?? "Error"}: ${message}); the execution is not affected`
      )
    }),
    Effect.withSpan(`workflow.hook ${name}`, {
      captureStackTrace: false,
      attributes: {
        "entity.type": "workflow",
        "entity.id": definition.id,
        "execution.id": event.executionId,
        "hook.name": name
      }
    }),
    Effect.annotateLogs({ workflowId: definition.id, executionId: event.executionId, hook: name })
  )
  return Effect.asVoid(Effect.forkIn(run, scope))
}

class HookTimedOut extends Data.TaggedError("HookTimedOut")<{ readonly message: string }> {}

/** What every hook's event carries, for an execution. */
export const hookBase = (
  execution: { readonly id: string; readonly workflowId: string; readonly userId?: string | undefined }
): HookBase => ({
  executionId: execution.id,
  workflowId: execution.workflowId,
  userId: execution.userId
})

/** onFinish (with the live `result`) or onError, for an ending just committed. */
export const endingHook = (
  definition: RuntimeHooks & { readonly id: string },
  execution: { readonly id: string; readonly workflowId: string; readonly userId?: string | undefined },
  ending: { readonly status: "completed" } | {
    readonly status: "error"
    readonly error: string
    readonly errorDetail?: ErrorDetail | undefined
  },
  result: unknown,
  scope: Scope.Scope
): Effect.Effect<void> =>
  ending.status === "completed"
    ? fireHook(definition, "onFinish", { ...hookBase(execution), result }, scope)
    : fireHook(
      definition,
      "onError",
      { ...hookBase(execution), error: ending.error, errorDetail: ending.errorDetail },
      scope
    )

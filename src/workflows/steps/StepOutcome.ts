import { Data } from "effect"
import type { ErrorDetail } from "../../core/errorDetail.js"
import { errorDetailOf, failureMessage, spanMessageOf } from "../../observability/errorDetail.js"
import type { SuspendSignal } from "../definition/StepContext.js"
import type { SleepSignal } from "./Sleep.js"

/** What a step's run ends with besides its value: it suspended, it failed, or it sleeps. */

/** A step that failed (not a suspension, not an interruption). */
export class StepFailed extends Data.TaggedError("StepFailed")<{
  readonly stepId: string
  readonly message: string
  /** What the step's code failed with, as recorded beside the message (issue #30). */
  readonly detail?: ErrorDetail | undefined
  /** The message a span records instead, when `message` was made of the error's fields (user data). */
  readonly spanMessage?: string | undefined
  /** What the code failed with, for a retry policy's `while` (steps/Policy.ts); never stored. */
  readonly error?: unknown
  /** Whether `error` is a defect (a throw, a die) rather than the code's typed failure. */
  readonly defect?: boolean | undefined
}> {}

/** The failure of a step whose code failed with `error`: its message, or its tag and fields without one. */
export const stepFailure = (stepId: string, error: unknown, defect?: boolean): StepFailed => {
  const detail = errorDetailOf(error)
  return new StepFailed({
    stepId,
    message: failureMessage(error, detail),
    detail,
    spanMessage: spanMessageOf(error, detail),
    error,
    defect
  })
}

export type StepOutcome = SuspendSignal | StepFailed | SleepSignal

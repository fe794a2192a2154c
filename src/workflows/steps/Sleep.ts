import { Data, Duration, Effect, Option } from "effect"
import { stringify } from "../../core/jsonText.js"
import type { StepFn } from "../definition/StepContext.js"
import type { SchemaOf } from "../definition/WorkflowTypes.js"
import type { SleepRecord } from "../execution/ExecutionRows.js"

/**
 * Durable timers (issue #31): `andSleep` and `andSleepUntil`. Entering one commits its wake time with a
 * `step-sleep` event and parks the execution (no fiber, no claim: SleepTimers); the timer service
 * wakes it at that time, on whichever instance, and the step completes with its data unchanged.
 */

/**
 * How long before its wake time a sleeper is taken (SleepTimers): the claim and the launch are paid before
 * `wakeAt`, and the woken step waits what is left in memory, so the step after the sleep starts at its time.
 */
export const WAKE_LEAD_MS = 50
/** A committed wake time at most this far ahead is waited in memory instead of parking again. */
const WAIT_IN_MEMORY_MS = 2 * WAKE_LEAD_MS

/** Sleeps until the clock reads `due` (epoch ms): a timer may fire a millisecond early, so what is left is slept again. */
export const sleepUntil = (due: number): Effect.Effect<void> =>
  Effect.suspend(() => {
    const ms = due - Date.now()
    return ms <= 0 ? Effect.void : Effect.zipRight(Effect.sleep(Duration.millis(ms)), sleepUntil(due))
  })

/** The longest a sleep may last: a duration or a date further away fails the step. */
export const MAX_SLEEP = Duration.days(366)

/** What a duration function returns: a Duration input, as a value, a Promise or an Effect. */
export type SleepDurationResult =
  | Duration.DurationInput
  | PromiseLike<Duration.DurationInput>
  | Effect.Effect<Duration.DurationInput, unknown, unknown>

/** What a date function returns: a `Date` or an ISO 8601 string, as a value, a Promise or an Effect. */
export type SleepDateResult =
  | Date
  | string
  | PromiseLike<Date | string>
  | Effect.Effect<Date | string, unknown, unknown>

/** The runtime fields of a sleep step (beside the common ones of `Step`). */
export type SleepStepFields =
  | { readonly type: "andSleep"; readonly duration: Duration.DurationInput | StepFn }
  | { readonly type: "andSleepUntil"; readonly date: Date | string | StepFn }

/** A sleep step as the runtime holds it. */
export type SleepStep = SleepStepFields & { readonly id: string; readonly resumeSchema?: SchemaOf<unknown> | undefined }

export const isSleepStep = (step: { readonly type: string }): step is SleepStep =>
  step.type === "andSleep" || step.type === "andSleepUntil"

/** The builder's runtime methods, given its `add`. */
export const sleepMethods = (add: (step: any) => unknown) => ({
  andSleep: (step: Omit<Extract<SleepStepFields, { type: "andSleep" }>, "type">) => add({ ...step, type: "andSleep" }),
  andSleepUntil: (step: Omit<Extract<SleepStepFields, { type: "andSleepUntil" }>, "type">) =>
    add({ ...step, type: "andSleepUntil" })
})

/** A sleep step whose wake time is ahead: the driver parks the execution until `wakeAt`. */
export class SleepSignal extends Data.TaggedError("SleepSignal")<{
  readonly stepId: string
  /** ISO. */
  readonly wakeAt: string
  /** Where the sleep is, when it is a child workflow's step (`notify/wait`). */
  readonly path?: string | undefined
}> {}

const describe = (value: unknown) => {
  try {
    return stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** The wake time a sleep step's value gives (epoch ms), or why it cannot be one. */
export const wakeTimeOf = (
  step: SleepStep,
  value: unknown,
  now: number
): { readonly at: number } | { readonly error: string } => {
  if (step.type === "andSleep") {
    const duration = Duration.decodeUnknown(value)
    if (Option.isNone(duration)) return { error: `duration ${describe(value)} is not a duration` }
    if (Duration.greaterThan(duration.value, MAX_SLEEP)) {
      return {
        error: `duration ${Duration.format(duration.value)} is over the ${Duration.format(MAX_SLEEP)} a sleep may last`
      }
    }
    return { at: now + Duration.toMillis(duration.value) }
  }
  const date = value instanceof Date ? value : typeof value === "string" ? new Date(value) : undefined
  if (date === undefined || Number.isNaN(date.getTime())) {
    return { error: `date ${describe(value)} is not a valid date (a Date or an ISO 8601 string)` }
  }
  if (date.getTime() - now > Duration.toMillis(MAX_SLEEP)) {
    return { error: `date ${date.toISOString()} is more than the ${Duration.format(MAX_SLEEP)} a sleep may last ahead` }
  }
  return { at: date.getTime() }
}

/**
 * Runs a sleep step: its data when the wake time has come (at once for a past one), else SleepSignal.
 * The time is the committed one when the execution already entered this step (resumed, recovered,
 * woken); else the step's value, evaluated here once (`evaluate` runs a function of the context).
 * `path` is the step's path: its id at the top level, `<parent>/<id>` in a child workflow.
 */
export const enterSleep = <E>(
  step: SleepStep,
  path: string,
  data: unknown,
  committed: SleepRecord | undefined,
  evaluate: (fn: StepFn) => Effect.Effect<unknown, E>,
  failed: (message: string) => E
): Effect.Effect<unknown, E | SleepSignal> =>
  Effect.gen(function*() {
    const inner = path === step.id ? undefined : path
    if (committed !== undefined && (committed.path ?? committed.stepId) === path) {
      const wakeAt = Date.parse(committed.wakeAt)
      const left = wakeAt - Date.now()
      if (left <= 0) return data
      if (left <= WAIT_IN_MEMORY_MS) return yield* Effect.as(sleepUntil(wakeAt), data)
      return yield* new SleepSignal({ stepId: step.id, wakeAt: committed.wakeAt, path: inner })
    }
    const spec = step.type === "andSleep" ? step.duration : step.date
    const value = typeof spec === "function" ? yield* evaluate(spec) : spec
    const now = Date.now()
    const wake = wakeTimeOf(step, value, now)
    if ("error" in wake) return yield* Effect.fail(failed(wake.error))
    if (wake.at <= now) return data
    return yield* new SleepSignal({ stepId: step.id, wakeAt: new Date(wake.at).toISOString(), path: inner })
  })

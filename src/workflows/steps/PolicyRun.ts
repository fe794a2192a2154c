import { Duration, Effect, Either, Option, type Schedule, ScheduleDecision, ScheduleIntervals } from "effect"
import { countStepRetry } from "../../observability/metrics/instruments.js"
import { MAX_ATTEMPTS, MAX_RETRY_DELAY, retryOf, type StepPolicy, type StepRetry } from "./Policy.js"
import { RECORDED_FIELDS_MAX, type RecordedError, type RetryState } from "./RetryState.js"
import { SleepSignal, sleepUntil } from "./Sleep.js"
import { StepFailed, type StepOutcome } from "./StepOutcome.js"

/** A back-off longer than this parks the execution like a sleep (when the driver can park it). */
export const PARK_BACKOFF_OVER = Duration.seconds(1)

/** A retry about to be committed: the state it leaves, and the failure and back-off that made it. */
export interface RetryCommit {
  readonly state: RetryState
  readonly failure: StepFailed
  /** The attempt that failed. */
  readonly failed: number
  readonly delayMs: number
  /** When the attempt failed (the step-retry event's time; the due time is this plus `delayMs`). */
  readonly failedAt: string
}

/**
 * A schedule stepped by hand, so that each delay is known (and committed) before it is waited: the
 * time each step is taken at is given, not read, so the schedule can be stepped again after a crash
 * with the recorded failures at their recorded times. The first step is taken at the first attempt's
 * start: `upTo`/`during` count from there.
 */
const scheduleStepper = (schedule: Schedule.Schedule<unknown, unknown>) => {
  let state: unknown = schedule.initial
  return (now: number, input: unknown): Effect.Effect<number | undefined> =>
    Effect.map(schedule.step(now, input, state), ([next, _, decision]) => {
      state = next
      return ScheduleDecision.isDone(decision)
        ? undefined
        : Math.max(0, ScheduleIntervals.start(decision.intervals) - now)
    })
}

/** A recorded failure as the schedule sees it after a crash: an object with its tag, message and fields. */
const replayed = (error: RecordedError): unknown => ({ ...error.fields, _tag: error._tag, message: error.message })

const recorded = (failure: StepFailed, at: number): RecordedError => {
  const detail = failure.detail ?? { _tag: "Error", message: failure.message, fields: {} }
  const fields = JSON.stringify(detail.fields).length > RECORDED_FIELDS_MAX ? {} : detail.fields
  return { _tag: detail._tag, message: detail.message, fields, at: new Date(at).toISOString() }
}

/** Whether the policy retries this failure: one the engine made itself (a bad suspend, a bad child input) never is. */
const retries = (retry: StepRetry<unknown>, failure: StepFailed): boolean => {
  if (!("error" in failure) || failure.error === undefined) return false
  if (retry.while === undefined) return true
  if (failure.defect === true) return false
  try {
    return retry.while(failure.error) === true
  } catch {
    return false
  }
}

const ended = (failure: StepFailed, why: string) =>
  new StepFailed({ ...failure, message: `${failure.message} (${why})` })

/**
 * Runs a step under its retry policy: attempt after attempt until one succeeds, suspends, or fails in a
 * way the policy does not retry (the schedule ended, `while` said no, MAX_ATTEMPTS). Each retry is
 * committed by `commit` (the attempt state and the step-retry event) before its back-off is waited;
 * `restored` is what an earlier run of this step committed (after a crash, a takeover or a shutdown):
 * the attempts go on from it, after what is left of its back-off. None when a commit was refused
 * (the claim was lost: nothing more runs here).
 */
export const runWithPolicy = <A, E>(options: {
  /** A top-level step, or an inner one (steps/innerPolicy.ts). */
  readonly step: { readonly id: string } & StepPolicy<any>
  readonly stepIndex: number
  readonly restored: RetryState | undefined
  readonly run: (attempt: number) => Effect.Effect<A, StepOutcome>
  readonly commit: (retry: RetryCommit) => Effect.Effect<boolean, E>
  /** The label of the retries' metric (none: not counted, a step run in memory inside a child workflow). */
  readonly workflowId: string | undefined
  /** Done when the instance starts draining: a back-off then stops waiting (none), its due time committed. */
  readonly drained?: Effect.Effect<void> | undefined
  /** Whether a back-off over PARK_BACKOFF_OVER parks the execution (a SleepSignal until its committed due time). */
  readonly parks?: boolean | undefined
}): Effect.Effect<Option.Option<Either.Either<A, StepOutcome>>, E> =>
  Effect.gen(function*() {
    const { step } = options
    const retry = retryOf(step)
    if (retry === undefined) return Option.some(yield* Effect.either(options.run(1)))
    const next = scheduleStepper(retry.schedule as Schedule.Schedule<unknown, unknown>)
    /** Waits until `due` (epoch ms): false when draining started first. */
    const waitUntil = (due: number): Effect.Effect<boolean> =>
      options.drained === undefined
        ? Effect.as(sleepUntil(due), true)
        : Effect.raceFirst(Effect.as(sleepUntil(due), true), Effect.as(options.drained, false))
    /** A back-off whose due time is committed: parked when long and the driver can, else waited here (false: draining). */
    const backOff = (dueAt: string): Effect.Effect<Either.Either<boolean, SleepSignal>> => {
      const due = Date.parse(dueAt)
      return options.parks === true && due - Date.now() > Duration.toMillis(PARK_BACKOFF_OVER)
        ? Effect.succeed(Either.left(new SleepSignal({ stepId: step.id, wakeAt: dueAt })))
        : Effect.map(waitUntil(due), Either.right)
    }
    const errors: Array<RecordedError> = []
    let attempt = 1
    let firstAt: number | undefined
    const restored = options.restored
    if (restored !== undefined) {
      firstAt = Date.parse(restored.firstAt)
      for (const [i, error] of restored.errors.entries()) {
        yield* next(i === 0 ? firstAt : Date.parse(error.at), replayed(error))
      }
      errors.push(...restored.errors)
      attempt = restored.attempt
      const waited = yield* backOff(restored.dueAt)
      if (Either.isLeft(waited)) {
        return Option.some(Either.left(waited.left))
      }
      if (!waited.right) return Option.none()
    }
    for (;;) {
      firstAt ??= Date.now()
      const outcome = yield* Effect.either(options.run(attempt))
      if (Either.isRight(outcome) || outcome.left._tag !== "StepFailed") return Option.some(outcome)
      const failure = outcome.left
      if (!retries(retry, failure)) return Option.some(outcome)
      if (attempt >= MAX_ATTEMPTS) {
        return Option.some(Either.left(ended(failure, `gave up after ${attempt} attempts, the most a step makes`)))
      }
      const failedAt = Date.now()
      const delayMs = yield* next(attempt === 1 ? firstAt : failedAt, failure.error)
      if (delayMs === undefined) return Option.some(outcome)
      if (delayMs > Duration.toMillis(MAX_RETRY_DELAY)) {
        return Option.some(
          Either.left(
            ended(
              failure,
              `its retry waits ${Duration.format(Duration.millis(delayMs))}, over the ${
                Duration.format(MAX_RETRY_DELAY)
              } a back-off may wait`
            )
          )
        )
      }
      errors.push(recorded(failure, failedAt))
      const state: RetryState = {
        stepIndex: options.stepIndex,
        stepId: step.id,
        attempt: attempt + 1,
        firstAt: new Date(firstAt).toISOString(),
        dueAt: new Date(failedAt + delayMs).toISOString(),
        errors: [...errors]
      }
      if (
        !(yield* options.commit({
          state,
          failure,
          failed: attempt,
          delayMs,
          failedAt: new Date(failedAt).toISOString()
        }))
      ) return Option.none()
      if (options.workflowId !== undefined) yield* countStepRetry(options.workflowId)
      const waited = yield* backOff(state.dueAt)
      if (Either.isLeft(waited)) return Option.some(Either.left(waited.left))
      if (!waited.right) return Option.none()
      attempt++
    }
  })

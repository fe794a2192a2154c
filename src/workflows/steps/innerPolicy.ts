import { Effect, Either, Option, Schema } from "effect"
import type { StepSpec } from "../definition/StepContext.js"
import type { InnerCheckpoint } from "./InnerOutputs.js"
import { timed } from "./Policy.js"
import { runWithPolicy } from "./PolicyRun.js"
import { RecordedError, type RetryState } from "./RetryState.js"
import type { StepEnv } from "./stepCode.js"
import { stepFailure, type StepOutcome } from "./StepOutcome.js"

/**
 * The policies of inner steps (issue #31 item 3): the steps of andAll and andRace, andWhen's step,
 * andBranch's branch steps, andForEach's step (per item) and a loop's step (per iteration). Each attempt
 * is bounded by the step's `timeout`; its `retry` runs through runWithPolicy as a top-level step's does,
 * except that a back-off never parks (siblings may be running): it waits in memory, its due time
 * committed. Each retry commits the state as the inner row `<path>#retry` with a step-retry event
 * carrying `path` (StepEnv.inner, fenced by the claim), and a step that runs again (crash, takeover,
 * resume) goes on from it. Without a checkpoint (inside a child workflow) retries run in memory.
 */

/** An inner step's retry state as its `<path>#retry` row holds it. */
const StoredRetryState = Schema.Struct({
  stepIndex: Schema.Number,
  stepId: Schema.String,
  attempt: Schema.Number,
  firstAt: Schema.String,
  dueAt: Schema.String,
  errors: Schema.Array(RecordedError)
})

export const encodeRetryState = (state: RetryState): unknown => Schema.encodeSync(StoredRetryState)(state)

/** The retry state committed for the inner step at `path`, if any (one that does not decode is none: the attempts start over). */
const restoredAt = (checkpoint: InnerCheckpoint | undefined, path: string): RetryState | undefined => {
  const stored = checkpoint?.committed.get(`${path}#retry`)
  return stored === undefined ? undefined : Option.getOrUndefined(Schema.decodeUnknownOption(StoredRetryState)(stored))
}

/**
 * Runs the inner step `spec`, committed under `path`, under its policies: `attempt` runs it once with
 * the env it is given (whose `attempt` is the inner step's when it has a `retry`; without one, the
 * outer step's, as before).
 */
export const withInnerPolicy = <A>(
  env: StepEnv,
  spec: StepSpec,
  path: string,
  attempt: (env: StepEnv) => Effect.Effect<A, StepOutcome>
): Effect.Effect<A, StepOutcome> => {
  const once = (env: StepEnv) => timed(spec, attempt(env), (timeout) => stepFailure(spec.id, timeout))
  if (spec.retry === undefined) return once(env)
  const checkpoint = env.inner
  return runWithPolicy({
    step: spec,
    stepIndex: checkpoint?.stepIndex ?? 0,
    workflowId: checkpoint?.workflowId,
    restored: restoredAt(checkpoint, path),
    parks: false,
    run: (n) => once({ ...env, attempt: n }),
    // A lost claim interrupts the step in the commit: runWithPolicy never sees a refusal.
    commit: (
      retry
    ) => (checkpoint === undefined ? Effect.succeed(true) : Effect.as(checkpoint.retry(spec.id, path, retry), true))
  }).pipe(
    Effect.flatMap(Option.match({
      onNone: () => Effect.interrupt,
      onSome: Either.match({ onLeft: (outcome) => Effect.fail(outcome), onRight: (output) => Effect.succeed(output) })
    }))
  )
}

import { Effect, Option } from "effect"
import type * as S from "../api/WorkflowSchemas.js"
import type { Step } from "../definition/WorkflowDefinition.js"
import { overBound } from "../execution/ExecutionBytes.js"
import { workflowEvent } from "../execution/ExecutionEndings.js"
import type { Claim, Execution } from "../execution/ExecutionRows.js"
import { retryingRead } from "../execution/storeRetry.js"
import { inMemory, type InnerCheckpoint, type InnerEntry, type InnerOutputs, isInnerPathOf } from "./InnerOutputs.js"
import { encodeRetryState } from "./innerPolicy.js"
import { innerStepsOf } from "./innerViews.js"
import { isLoopStep } from "./Loops.js"
import { retryEvent } from "./PolicyDriver.js"
import type { StepEnv } from "./runner.js"

/** How the driver commits a held execution's write with its events (its `checkpoint`, store failures as defects). */
export type CommitWith = (
  events: ReadonlyArray<S.WorkflowEvent>,
  write: Effect.Effect<Option.Option<number>>
) => Effect.Effect<Option.Option<number>>

/**
 * The env step `index` runs with: a loop, branch, andAll or andWorkflow step (an andRace or andWhen whose inner steps retry) gets its committed inner outputs (read now)
 * and commits more fenced by `claim`, each with a step-complete carrying its `path`; a lost claim
 * interrupts the step. Other steps run with `env` as it is.
 */
export const withInnerCheckpoints = (
  env: StepEnv,
  step: Step,
  index: number,
  held: {
    readonly outputs: InnerOutputs
    readonly execution: Execution
    readonly claim: Claim
    readonly commitWith: CommitWith
    /** The step starts for the first time (the fiber advanced to it, or the execution's opening write started it): nothing to read. */
    readonly fresh: boolean
    /** workflows.maxExecutionBytes: a commit that leaves the execution storing more fails the step. */
    readonly maxBytes: number
  }
): Effect.Effect<StepEnv> => {
  const { claim, commitWith, execution, outputs } = held
  const retrying = (step.type === "andRace" || step.type === "andWhen") &&
    innerStepsOf(step).some(({ step: one }) => one.retry !== undefined)
  if (!isLoopStep(step) && step.type !== "andAll" && step.type !== "andWorkflow" && !retrying) {
    // andRace commits nothing apart (innerRunner): no read either, unless a racer's retries are committed.
    return Effect.succeed(
      step.type === "andRace"
        ? { ...env, inner: inMemory({ stepIndex: index, workflowId: execution.workflowId }) }
        : env
    )
  }
  const read = held.fresh
    ? Effect.succeed(new Map<string, unknown>())
    : retryingRead(outputs.read(execution.id, step.id))
  return Effect.map(read, (all) => {
    const committed = new Map(Array.from(all).filter(([path]) => isInnerPathOf(step.id, path)))
    const commitOrInterrupt = (
      entries: ReadonlyArray<InnerEntry>,
      events: ReadonlyArray<S.WorkflowEvent>,
      maxBytes = held.maxBytes
    ) => {
      // Unknown when a store failure's retry settled the write by reading it back: the next commit checks.
      let storedBytes = 0
      const write = Effect.map(
        outputs.commit(claim, entries, events),
        Option.map((written) => {
          storedBytes = written.storedBytes
          return written.lastSeq
        })
      )
      return commitWith(events, write).pipe(
        Effect.flatMap((done) =>
          Option.isNone(done)
            ? Effect.interrupt
            : storedBytes > maxBytes
            ? Effect.fail(overBound(step.id, storedBytes, maxBytes))
            : Effect.void
        )
      )
    }
    const inner: InnerCheckpoint = {
      committed,
      commit: (entries, event) => {
        const events = event === undefined ? [] : [
          workflowEvent(execution, "step-complete", event.from, "success", {
            stepIndex: index,
            stepType: event.stepType,
            output: event.output,
            path: event.path
          })
        ]
        return commitOrInterrupt(entries, events)
      },
      retry: (from, path, retry) =>
        commitOrInterrupt(
          [{ path: `${path}#retry`, value: encodeRetryState(retry.state), replace: true }],
          [retryEvent(execution, { from, stepType: step.type, path }, index, retry)],
          // A retry's state replaces its row: the output commit that follows is checked.
          Infinity
        ).pipe(Effect.catchTag("StepFailed", () => Effect.void)),
      stepIndex: index,
      workflowId: execution.workflowId
    }
    return { ...env, inner }
  })
}

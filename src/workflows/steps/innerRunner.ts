import { Effect, Either } from "effect"
import { nonJsonValue } from "../../core/jsonValue.js"
import { isSuspendSignal, type StepSpec, SuspendSignal } from "../definition/StepContext.js"
import type { Step, WorkflowDefinition } from "../definition/WorkflowDefinition.js"
import { checkOutput, decodeValue, encodeValue, schemasOf } from "../execution/StepCodec.js"
import { jsonBytes, MAX_STEP_OUTPUT_BYTES } from "../execution/StoredValues.js"
import type { InnerCheckpoint } from "./InnerOutputs.js"
import { withInnerPolicy } from "./innerPolicy.js"
import { contextFor, inner, pathIn, runCode, type RunStep, type StepEnv } from "./stepCode.js"
import { StepFailed, type StepOutcome } from "./StepOutcome.js"

/**
 * Inner checkpoints of andAll and a child workflow's steps (issue #31 item 4): each inner output is
 * committed (StepEnv.inner) as it completes, under `<outer>/<inner id>`, and read back when the step runs
 * again, so only uncommitted inner work re-runs. The last one to complete is not committed apart: the
 * step's own commit follows at once and holds it (one write less on every such step: the pipeline of the
 * bench has an andAll and an andRace). For the same reason andRace commits nothing apart: its winner is
 * the step's output. An output that cannot be stored (not JSON, too large) is not committed: the step's
 * own checks report it as before.
 */

type Schema = Parameters<typeof encodeValue>[0]

/** A suspension from inside a step names where it happened (issue #31 settled 7): the innermost path. */
export const suspendingAt =
  (path: string) => <A>(effect: Effect.Effect<A, StepOutcome>): Effect.Effect<A, StepOutcome> =>
    Effect.mapError(
      effect,
      (
        outcome
      ) => (isSuspendSignal(outcome) && outcome.path === undefined ? new SuspendSignal({ ...outcome, path }) : outcome)
    )

const storable = (schema: Schema, output: unknown): Either.Either<unknown, void> => {
  const encoded = encodeValue(schema, output)
  if (Either.isLeft(encoded)) return Either.left(undefined)
  if (nonJsonValue(encoded.right, { strict: true }) !== undefined || jsonBytes(encoded.right) > MAX_STEP_OUTPUT_BYTES) {
    return Either.left(undefined)
  }
  return Either.right(encoded.right)
}

const restored = (schema: Schema, stored: unknown) => Either.getOrElse(decodeValue(schema, stored, false), () => stored)

/** Commits an inner output when it can be stored. */
const commitInner = (
  checkpoint: InnerCheckpoint,
  outer: Step,
  from: string,
  path: string,
  schema: Schema,
  output: unknown
) =>
  Either.match(storable(schema, output), {
    onLeft: () => Effect.void,
    onRight: (stored) =>
      checkpoint.commit([{ path, value: stored }], { from, path, stepType: outer.type, output: stored })
  })

const runSpec = (
  env: StepEnv,
  outer: Extract<Step, { type: "andAll" | "andRace" }>,
  one: StepSpec,
  data: unknown,
  resumeData: unknown
) => {
  const running = inner(outer, one)
  const path = pathIn(env, `${outer.id}/${one.id}`)
  // Under its `timeout` and `retry` (steps/innerPolicy.ts).
  return withInnerPolicy(
    env,
    one,
    path,
    (env) =>
      runCode(
        one.id,
        (signal) => one.execute(Object.assign(contextFor(env, running, data, resumeData, signal), { path }))
      )
  ).pipe(suspendingAt(path))
}

export const runAll = (
  env: StepEnv,
  step: Extract<Step, { type: "andAll" }>,
  data: unknown,
  resumeData: unknown,
  checkpoint: InnerCheckpoint
) =>
  Effect.suspend(() => {
    const pathOf = (one: StepSpec) => pathIn(env, `${step.id}/${one.id}`)
    let running = step.steps.filter((one) => !checkpoint.committed.has(pathOf(one))).length
    return Effect.all(
      step.steps.map((one) => {
        const path = pathOf(one)
        const run = checkpoint.committed.has(path)
          ? Effect.succeed(restored(one.outputSchema, checkpoint.committed.get(path)))
          : Effect.tap(runSpec(env, step, one, data, resumeData), (out) =>
            --running === 0 ? Effect.void : Effect.zipRight(
              // Siblings that end in the same turn (plain values) make this one's commit needless: the step's holds them all.
              Effect.yieldNow(),
              Effect.suspend(
                () => (running === 0 ? Effect.void : commitInner(checkpoint, step, one.id, path, one.outputSchema, out))
              )
            ))
        return Effect.tap(run, (out) => {
          env.stepData[one.id] = out
        })
      }),
      { concurrency: "unbounded" }
    )
  })

/** andRace's racers: each names its path in its context and suspension; the winner is the step's output, committed with it. */
export const runRace = (env: StepEnv, step: Extract<Step, { type: "andRace" }>, data: unknown, resumeData: unknown) =>
  Effect.raceAll(step.steps.map((one) =>
    Effect.tap(runSpec(env, step, one, data, resumeData), (out) => {
      env.stepData[one.id] = out
    })
  ))

/**
 * A child workflow's steps in order, each committed under `<outer path>/<child step id>`: the committed
 * ones are read back, and the first one that runs gets the resume data (it is the one that
 * suspended), not every step. Its steps commit their inner work under their own paths (a loop's items,
 * a grandchild's steps) through the same checkpoint, and a sleep among them parks the execution.
 */
export const runChildSteps = (
  env: StepEnv,
  outer: Extract<Step, { type: "andWorkflow" }>,
  child: WorkflowDefinition,
  input: unknown,
  resumeData: unknown,
  checkpoint: InnerCheckpoint,
  runStep: RunStep
): Effect.Effect<unknown, StepOutcome> =>
  Effect.gen(function*() {
    const pathPrefix = pathIn(env, `${outer.id}/`)
    const childEnv: StepEnv = { ...env, input, stepData: {}, suspendSchema: child.suspendSchema, pathPrefix }
    const schemas = schemasOf(child).data
    let data = input
    let resume = resumeData
    const last = child.steps.length - 1
    for (const [i, step] of child.steps.entries()) {
      const path = `${pathPrefix}${step.id}`
      if (checkpoint.committed.has(path)) {
        data = restored(schemas[i + 1], checkpoint.committed.get(path))
        childEnv.stepData[step.id] = data
        continue
      }
      const out = yield* suspendingAt(path)(runStep(childEnv, step, data, resume))
      resume = undefined
      const mismatch = checkOutput(step, out)
      if (mismatch !== undefined) return yield* new StepFailed({ stepId: step.id, message: mismatch })
      if (i < last) yield* commitInner(checkpoint, outer, step.id, path, schemas[i + 1], out)
      childEnv.stepData[step.id] = out
      data = out
    }
    return data
  })

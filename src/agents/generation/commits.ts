/** How a call tells the commit plug-in (plugins.ts) of each step's end and each tool's result. */
import type { StepResult, ToolSet } from "ai"
import { Effect, Option, Runtime, type Tracer } from "effect"
import type { CommitPlugin, CommitRef } from "./plugins.js"

/** The SDK's `onStepEnd` for a call: the step committed inside the call's span before the next one starts. */
export const stepEndCommit = (
  commits: CommitPlugin,
  ref: CommitRef,
  runtime: Runtime.Runtime<never>,
  parent: Option.Option<Tracer.AnySpan>
) =>
(step: StepResult<ToolSet>): Promise<void> => {
  const commit = commits.stepEnd(ref, step)
  return Runtime.runPromise(runtime)(
    Option.match(parent, { onNone: () => commit, onSome: (span) => Effect.withParentSpan(commit, span) })
  )
}

/** What runs after each of the call's tools returned: its result committed before the model reads it. */
export const toolResultCommit =
  (commits: CommitPlugin, ref: CommitRef) =>
  (toolName: string, toolCallId: string, input: unknown, output: unknown): Effect.Effect<void> =>
    commits.toolResult(ref, { toolName, toolCallId, input, output })

/** How a call tells the commit plug-in (plugins.ts) of each step's end and each tool's result. */
import type { StepResult, ToolSet } from "ai"
import { Effect, Option, Runtime, type Tracer } from "effect"
import type { CommitPlugin, CommitRef } from "./plugins.js"

/** A call's commits: made once per call, only when a commit plug-in is plugged in. */
export interface CallCommits {
  /** The SDK's `onStepEnd`: the step committed, inside the call's span, before the next one starts. */
  readonly stepEnd: (step: StepResult<ToolSet>) => Promise<void>
  /** Runs after each of the call's tools returned: its result committed before the model reads it. */
  readonly toolResult: (toolName: string, toolCallId: string, input: unknown, output: unknown) => Effect.Effect<void>
}

export const commitsOf = (
  commits: CommitPlugin,
  ref: CommitRef,
  runtime: Runtime.Runtime<never>,
  parent: Option.Option<Tracer.AnySpan>
): CallCommits => ({
  stepEnd: (step) => {
    const commit = commits.stepEnd(ref, step)
    return Runtime.runPromise(runtime)(
      Option.match(parent, { onNone: () => commit, onSome: (span) => Effect.withParentSpan(commit, span) })
    )
  },
  toolResult: (toolName, toolCallId, input, output) => commits.toolResult(ref, { toolName, toolCallId, input, output })
})

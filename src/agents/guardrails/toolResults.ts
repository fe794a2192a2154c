import { Effect, type Option, type Tracer } from "effect"
import type { ExecutionFailed } from "../../core/errors.js"
import { jsonText } from "../../core/jsonText.js"
import type { AgentCallContext, AgentDefinition } from "../Agent.js"
import type { TextResult } from "../AgentsSchemas.js"
import { resultOutcome, type ToolOutcome } from "../generation/toolOutcomes.js"
import { type Guarded, guardOutput } from "./run.js"

/**
 * Output guardrails on what a tool answered, as the client and history receive it (`toolResults`,
 * `tool-result` frames, /chat tool parts). The model itself read the raw result within the call.
 * A string is guarded as it is; any other value as its JSON text (as /object's answer is).
 */

/** A rewritten JSON text as its value again; a rewrite that is no longer JSON is kept as text. */
export const parsedOr = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** The text the guardrails read of a tool's value, and the value a rewrite of it gives. */
export const toolText = (value: unknown) => {
  const text = typeof value === "string" ? value : jsonText(value)
  return { text, rewritten: (guarded: string): unknown => typeof value === "string" ? guarded : parsedOr(guarded) }
}

type Results = TextResult["toolResults"]

export type GuardedTools =
  | { readonly results: Results; readonly changed: ReadonlyMap<string, unknown> }
  | Extract<Guarded, { blocked: unknown }>

/** /text's tool results through the output guardrails: the same array when none was rewritten. */
export const guardToolResults = (
  agent: AgentDefinition,
  call: AgentCallContext,
  span: Option.Option<Tracer.AnySpan>,
  results: Results
): Effect.Effect<GuardedTools, ExecutionFailed> =>
  Effect.gen(function*() {
    const changed = new Map<string, unknown>()
    const out: Array<Results[number]> = []
    for (const result of results) {
      const { rewritten, text } = toolText(result.result)
      const guarded = yield* guardOutput(agent, call, span, text)
      if ("blocked" in guarded) return guarded
      if (guarded.text === text) {
        out.push(result)
        continue
      }
      const value = rewritten(guarded.text)
      changed.set(result.toolCallId, value)
      out.push({ ...result, result: value })
    }
    return { results: changed.size === 0 ? results : out, changed }
  })

/**
 * The outcomes memory keeps with the rewritten results' digests: a client sends back what it received,
 * and that is the result the service produced.
 */
export const rewrittenOutcomes = (
  outcomes: ReadonlyArray<ToolOutcome>,
  changed: ReadonlyMap<string, unknown>
): ReadonlyArray<ToolOutcome> =>
  changed.size === 0 ?
    outcomes :
    outcomes.map((outcome) =>
      changed.has(outcome.toolCallId)
        ? resultOutcome(outcome.toolCallId, outcome.toolName, changed.get(outcome.toolCallId))
        : outcome
    )

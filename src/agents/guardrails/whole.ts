import { Effect } from "effect"
import { ExecutionFailed, type GuardrailBlocked } from "../../core/errors.js"
import type { AgentDefinition } from "../Agent.js"
import type { Blocked, Done, Outcome, PreparedCall } from "../generation/contract.js"
import type { TextAnswer } from "../generation/plugins.js"
import { guardOutput } from "./run.js"
import { guardToolResults, rewrittenOutcomes } from "./toolResults.js"

const blockedOutcome = (outcome: Outcome, blocked: GuardrailBlocked): Blocked => ({
  blocked,
  outcome: { status: "blocked", usage: outcome.usage, toolCalls: outcome.toolCalls, toolResults: outcome.toolResults }
})

/**
 * /text's answer through the output guardrails: the text and the tool results (and what history and
 * memory keep) rewritten, or blocked.
 */
export const guardedText = (agent: AgentDefinition, prepared: PreparedCall) =>
<A extends TextAnswer, E>(
  self: Effect.Effect<Done<A>, E>
): Effect.Effect<Done<A> | Blocked, E | ExecutionFailed> =>
  Effect.flatMap(self, (done) =>
    Effect.gen(function*() {
      const text = yield* guardOutput(agent, prepared.call, prepared.parent, done.result.text)
      if ("blocked" in text) return blockedOutcome(done.outcome, text.blocked)
      const tools = yield* guardToolResults(agent, prepared.call, prepared.parent, done.result.toolResults)
      if ("blocked" in tools) return blockedOutcome(done.outcome, tools.blocked)
      if (text.text === done.result.text && tools.changed.size === 0) return done
      const outcome: Outcome = {
        ...done.outcome,
        ...(text.text === done.result.text ? {} : { output: text.text }),
        ...(done.outcome.toolResults === undefined
          ? {}
          : { toolResults: rewrittenOutcomes(done.outcome.toolResults, tools.changed) })
      }
      return { result: { ...done.result, text: text.text, toolResults: tools.results }, outcome }
    }))

/**
 * /object's answer through the output guardrails, which see its JSON text: a rewrite must still be
 * JSON (a redaction inside a string value is), else the call fails.
 */
export const guardedObject =
  (agent: AgentDefinition, prepared: PreparedCall) =>
  <E>(self: Effect.Effect<Done<unknown>, E>): Effect.Effect<Done<unknown> | Blocked, E | ExecutionFailed> =>
    Effect.flatMap(self, (done) => {
      const text = JSON.stringify(done.result)
      return Effect.flatMap(
        guardOutput(agent, prepared.call, prepared.parent, text),
        (guarded): Effect.Effect<Done<unknown> | Blocked, ExecutionFailed> => {
          if ("blocked" in guarded) return Effect.succeed(blockedOutcome(done.outcome, guarded.blocked))
          if (guarded.text === text) return Effect.succeed(done)
          return Effect.try({
            try: () => ({
              result: JSON.parse(guarded.text) as unknown,
              outcome: { ...done.outcome, output: guarded.text }
            }),
            catch: () =>
              new ExecutionFailed({
                message: `Agent ${agent.id} failed: an output guardrail's rewrite of the object is not JSON`
              })
          })
        }
      )
    })
